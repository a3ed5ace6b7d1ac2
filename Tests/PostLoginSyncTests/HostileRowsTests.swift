import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Synchronization
import Testing

/// The audit's client findings on the sync engine: recipients of another user or listed twice
/// (12, 15) against a hostile server, and junk envelopes (19) on both remotes.
@Suite("A hostile server's rows: another user's or doubled devices, endless listings, junk envelopes")
struct HostileRowsTests {
    /// A server that accepts every write and lists `devices` for the device listing.
    /// The recipient device ids of every envelope the hostile server was sent.
    final class Sealed: Sendable {
        let ids = Mutex<[String]>([])
        var all: [String] { ids.withLock { $0 } }
    }

    static func hostileRemote(devices: @escaping @Sendable () -> String, envelopes: Sealed) throws -> HostileServer {
        try HostileServer { request, connection in
            let table = request.path.split(separator: "/").last.map(String.init) ?? ""
            switch (request.method, table) {
            case ("GET", "devices"):
                let first = request.headers["range"].flatMap { Int($0.split(separator: "-")[0]) } ?? 0
                if first > 0 {
                    connection.json(200, "[]", headers: ["content-range": "*/*"])
                    return
                }
                let list = devices()
                let count = ((try? JSONSerialization.jsonObject(with: Data(list.utf8))) as? [Any])?.count ?? 0
                connection.json(200, list, headers: ["content-range": "0-\(count - 1)/*"])
            case ("GET", _):
                connection.json(200, "[]", headers: ["content-range": "*/*"])
            case ("POST", "agent_coding_session_secrets"):
                let rows = (try? JSONSerialization.jsonObject(with: request.body)) as? [[String: Any]] ?? []
                envelopes.ids.withLock { $0 += rows.compactMap { $0["device_id"] as? String } }
                connection.respond(201)
            case ("POST", _) where request.path.contains("/rpc/"):
                // A deployment without the project's functions.
                connection.json(404, #"{"code":"PGRST202","message":"Could not find the function"}"#)
            case ("POST", _):
                connection.respond(201)
            default:
                connection.respond(204)
            }
        }
    }

    static func deviceJSON(_ id: String, user: UUID, name: String, key: X25519PublicKey, trusted: Bool = true) -> String
    {
        #"{"id":"\#(id)","user_id":"\#(user.canonical)","name":"\#(name)","device_type":"ios-phone","is_active":true,"device_role":"trusted_executor","public_key":"\#(key.base64)","is_trusted":\#(trusted)}"#
    }

    @Test(
        "a listed device of another user receives nothing, even flagged trusted, and is reported as a possible attack",
        arguments: [false, true])
    func foreignDevice(requireTrusted: Bool) async throws {
        let world = try World(.embedded)
        let sealed = Sealed()
        let phone = UUID(), intruder = UUID(), other = UUID()
        let phoneKey = X25519PrivateKey().publicKey, intruderKey = X25519PrivateKey().publicKey
        let selfKey = Mutex<X25519PublicKey?>(nil)
        let selfID = UUID()
        let user = world.user
        let server = try Self.hostileRemote(
            devices: {
                "["
                    + [
                        Self.deviceJSON(selfID.canonical, user: user, name: "desktop", key: selfKey.withLock { $0! }),
                        Self.deviceJSON(phone.canonical, user: user, name: "phone", key: phoneKey),
                        Self.deviceJSON(intruder.canonical, user: other, name: "intruder", key: intruderKey),
                    ].joined(separator: ",") + "]"
            }, envelopes: sealed)
        defer { server.stop() }
        var configuration = PostgRESTConfiguration(projectURL: server.baseURL, apiKey: "anon", userID: user) { _ in
            "token"
        }
        configuration.baseBackoff = Duration.milliseconds(5)
        var options = SyncOptions()
        options.recipients = RecipientOptions(requireTrusted: requireTrusted)
        let desktop = try await world.device(
            "desktop", role: .desktop, id: selfID, options: options,
            remote: { [configuration] _ in PostgRESTRemoteStore(configuration: configuration) })
        selfKey.withLock { $0 = desktop.identity.publicKey }
        let repository = RepositoryRecord(userID: user, deviceID: selfID, name: "r", localPath: "/r")
        try await desktop.store.upsertRepositories([repository])
        for i in 0..<3 {
            try await desktop.store.createSession(
                SessionRecord(userID: user, deviceID: selfID, repositoryID: repository.id, title: "s\(i)"))
        }
        let report = try await desktop.engine.push()
        let recipients = Set(sealed.all)
        #expect(recipients == [selfID.canonical, phone.canonical])
        #expect(!recipients.contains(intruder.canonical))
        #expect(report.errors.contains { $0.code == .foreignDevice && $0.rowID == intruder.canonical })
        #expect(report.envelopesSealed == 6)
    }

    @Test(
        "a device listed twice (or this desktop's id in upper case) does not crash the push; it is sealed once and reported"
    )
    func duplicateDevice() async throws {
        let world = try World(.embedded)
        let sealed = Sealed()
        let phone = UUID()
        let phoneKey = X25519PrivateKey().publicKey
        let selfKey = Mutex<X25519PublicKey?>(nil)
        let selfID = UUID()
        let user = world.user
        let server = try Self.hostileRemote(
            devices: {
                let key = selfKey.withLock { $0! }
                return "["
                    + [
                        Self.deviceJSON(selfID.canonical, user: user, name: "desktop", key: key),
                        Self.deviceJSON(selfID.uuidString.uppercased(), user: user, name: "desktop again", key: key),
                        Self.deviceJSON(phone.canonical, user: user, name: "phone", key: phoneKey),
                        Self.deviceJSON(
                            phone.canonical, user: user, name: "phone again", key: X25519PrivateKey().publicKey),
                    ]
                    .joined(separator: ",") + "]"
            }, envelopes: sealed)
        defer { server.stop() }
        var configuration = PostgRESTConfiguration(projectURL: server.baseURL, apiKey: "anon", userID: user) { _ in
            "token"
        }
        configuration.baseBackoff = Duration.milliseconds(5)
        let desktop = try await world.device(
            "desktop", role: .desktop, id: selfID,
            remote: { [configuration] _ in PostgRESTRemoteStore(configuration: configuration) })
        selfKey.withLock { $0 = desktop.identity.publicKey }
        let repository = RepositoryRecord(userID: user, deviceID: selfID, name: "r", localPath: "/r")
        try await desktop.store.upsertRepositories([repository])
        try await desktop.store.createSession(
            SessionRecord(userID: user, deviceID: selfID, repositoryID: repository.id))
        let report = try await desktop.engine.push()
        let rows = sealed.all
        #expect(rows.count == 2)
        #expect(Set(rows) == [selfID.canonical, phone.canonical])
        #expect(report.errors.filter { (issue: SyncIssue) in issue.code == .duplicateDevice }.count == 2)
        // The first listing of the phone wins: its envelope opens with the phone's first key.
        #expect(report.recipients.filter(\.receives).count == 2)
    }

    @Test(
        "round 3, finding 9: a push whose digest counted a few rows stops the envelope listing as soon as it passes them"
    )
    func listingBoundedByDigest() async throws {
        let world = try World(.embedded)
        let selfID = UUID()
        let selfKey = Mutex<X25519PublicKey?>(nil)
        let user = world.user
        let pages = Mutex(0)
        let server = try HostileServer { request, connection in
            let table = request.path.split(separator: "/").last.map(String.init) ?? ""
            switch (request.method, table) {
            case ("GET", "devices"):
                let me = Self.deviceJSON(selfID.canonical, user: user, name: "desktop", key: selfKey.withLock { $0! })
                connection.json(200, "[" + me + "]", headers: ["content-range": "0-0/1"])
            case ("POST", "session_secret_digest"):
                // One bucket of one row, which differs from the ledger's: its sessions are listed.
                connection.json(200, #"[{"bucket":0,"pairs":1,"h1":1,"h2":1}]"#)
            case ("GET", "agent_coding_session_secrets"):
                // Full pages of new rows, forever.
                let page = pages.withLock { value -> Int in
                    value += 1
                    return value
                }
                let rows = (0..<1000).map {
                    #"{"id":\#(page * 1000 + $0),"session_id":"\#(UUID().canonical)","device_id":"\#(UUID().canonical)","ephemeral_public_key":"k"}"#
                }
                connection.json(200, "[" + rows.joined(separator: ",") + "]", headers: ["content-range": "0-999/*"])
            case ("GET", _):
                connection.json(200, "[]", headers: ["content-range": "*/*"])
            case ("POST", _) where request.path.contains("/rpc/"):
                connection.json(404, #"{"code":"PGRST202","message":"Could not find the function"}"#)
            case ("POST", _):
                connection.respond(201)
            default:
                connection.respond(204)
            }
        }
        defer { server.stop() }
        var configuration = PostgRESTConfiguration(projectURL: server.baseURL, apiKey: "anon", userID: user) { _ in
            "token"
        }
        configuration.baseBackoff = Duration.milliseconds(5)
        // Undefended, the listing would stop only here: 20 pages.
        configuration.maxListedRows = 20_000
        configuration.listingStreams = 1
        let desktop = try await world.device(
            "desktop", role: .desktop, id: selfID,
            remote: { [configuration] _ in PostgRESTRemoteStore(configuration: configuration) })
        selfKey.withLock { $0 = desktop.identity.publicKey }
        let repository = RepositoryRecord(userID: user, deviceID: selfID, name: "r", localPath: "/r")
        try await desktop.store.upsertRepositories([repository])
        try await desktop.store.createSession(
            SessionRecord(userID: user, deviceID: selfID, repositoryID: repository.id))
        let report = try await desktop.engine.push()
        #expect(report.errors.contains { $0.code == SyncIssue.Code(remote: .listingDidNotEnd) })
        #expect(pages.withLock { $0 } == 1)
    }

    @Test(
        "envelopes that do not open are reported and never stored; a good envelope kept earlier is not displaced",
        arguments: Backend.available)
    func junkEnvelopes(backend: Backend) async throws {
        let world = try World(backend)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(sessions: 9)
        _ = try await desktop.engine.push()
        _ = try await phone.engine.pull()
        let before = try await world.opened(by: phone)
        #expect(before.count == 9)

        // Whoever holds the user's token replaces eight of the phone's envelopes with junk.
        let sessions = try await desktop.store.sessions().map(\.id).sorted { $0.canonical < $1.canonical }
        let low = ByteEncoding.base64([UInt8](repeating: 0, count: 32))
        let junk: [(String, String)] = [
            (X25519PrivateKey().publicKey.base64, "AAAA"),
            (X25519PrivateKey().publicKey.base64, ByteEncoding.base64([UInt8](repeating: 7, count: 76))),
            (low, ByteEncoding.base64([UInt8](repeating: 7, count: 76))),
            ("", ByteEncoding.base64([UInt8](repeating: 1, count: 76))),
            ("bm90IGEga2V5", ByteEncoding.base64([UInt8](repeating: 2, count: 76))),
            (X25519PrivateKey().publicKey.base64, ""),
            (X25519PrivateKey().publicKey.base64, ByteEncoding.base64([UInt8](repeating: 3, count: 27))),
            ("v2:" + X25519PrivateKey().publicKey.base64, ByteEncoding.base64([UInt8](repeating: 4, count: 85))),
        ]
        let remote = try world.operatorRemote()
        let rows = zip(sessions, junk).map {
            EnvelopeRecord(
                sessionID: $0.0, deviceID: phone.identity.id, ephemeralPublicKey: $0.1.0, encryptedSecret: $0.1.1)
        }
        let written = try await remote.upsertEnvelopes(rows, onBatchAccepted: nil)
        #expect(written.accepted == 8)

        let pull = try await phone.engine.pull()
        let phase = try #require(pull.phases.first { $0.phase == .envelopes })
        #expect(phase.failed == 8 && phase.applied == 0)
        #expect(pull.errors.filter { $0.code == .envelopeUnreadable }.count == 8)
        let stored = try await phone.store.receivedEnvelopes()
        let junkSet = Set(
            rows.map { SecretEnvelope(ephemeralPublicKey: $0.ephemeralPublicKey, encryptedSecret: $0.encryptedSecret) })
        #expect(stored.allSatisfy { !junkSet.contains($0.envelope) }, "a junk envelope was stored")
        #expect(try await world.opened(by: phone) == before, "the good envelopes kept earlier still open")
    }
}
