import Foundation
import RemoteStore
import SyncModel
import Testing

/// The client against a hostile loopback server, for every response shape it reads (issue 17,
/// item 4): each read the client makes, answered 200 with each kind of wrong body, ends in a
/// typed ``RemoteStoreError``, in bounded time, without a crash.
@Suite("Every read against hostile bodies", .timeLimit(.minutes(2)))
struct HostileResponseTests {
    typealias Read = @Sendable (PostgRESTRemoteStore) async throws -> Void

    /// Every read of the client, by name: tables, listings, RPC results, trust rows, coordination.
    static let reads: [(name: String, call: Read)] = [
        ("listDevices", { _ = try await $0.listDevices() }),
        ("fetchRepositories", { _ = try await $0.fetchRepositories(after: nil) }),
        ("fetchSessions", { _ = try await $0.fetchSessions(after: nil) }),
        ("listIDs(.repositories)", { _ = try await $0.listIDs(.repositories, deviceID: nil) }),
        ("listIDs(.sessions)", { _ = try await $0.listIDs(.sessions, deviceID: nil) }),
        ("listEnvelopePairs", { _ = try await $0.listEnvelopePairs() }),
        ("listEnvelopeKeys", { _ = try await $0.listEnvelopeKeys(sessions: [UUID()], atMost: nil) }),
        ("fetchEnvelopes", { _ = try await $0.fetchEnvelopes(addressedTo: UUID()) }),
        ("secretDigest", { _ = try await $0.secretDigest(ownerDeviceID: UUID(), buckets: 16) }),
        ("fetchIdentityKey", { _ = try await $0.fetchIdentityKey() }),
        ("listCertificates", { _ = try await $0.listCertificates() }),
        ("listRevocations", { _ = try await $0.listRevocations() }),
        ("listPairingRequests", { _ = try await $0.listPairingRequests() }),
        ("listOpenSecretRequests", { _ = try await $0.listOpenSecretRequests() }),
        ("changes", { _ = try await $0.changes(since: nil, statements: true) }),
        (
            "claimSessionActivity",
            { _ = try await $0.claimSessionActivity(sessionID: UUID(), deviceID: UUID(), clientType: .ios) }
        ),
        (
            "registerPushToken",
            { _ = try await $0.registerPushToken(PushTokenRegistration(deviceID: UUID(), token: "abc123")) }
        ),
        ("invalidatePushToken", { _ = try await $0.invalidatePushToken("abc123") }),
        ("pushTokenStatus", { _ = try await $0.pushTokenStatus(deviceID: UUID()) }),
        ("clearApproval", { _ = try await $0.clearApproval(requestID: "r1", excludingToken: nil) }),
        ("listOutbox", { _ = try await $0.listOutbox(limit: 10) }),
    ]

    /// Wrong bodies of every kind: not JSON, the wrong JSON type, rows whose fields have the
    /// wrong types, nesting deep enough to exhaust a recursive parser, huge numbers, control
    /// characters.
    static let bodies: [(name: String, body: String)] = [
        ("not JSON", "{not json"),
        ("empty", ""),
        ("null", "null"),
        ("a huge number", "1e999"),
        ("a string", #""x""#),
        ("an object", #"{"a":1}"#),
        ("an array of numbers", "[1,2]"),
        (
            "rows of wrong types",
            #"[{"id":5,"user_id":[],"session_id":{},"device_id":true,"public_key":7,"body":null,"signature":1,"token":2,"name":3}]"#
        ),
        ("rows of nulls", #"[{"id":null,"user_id":null,"session_id":null,"device_id":null}]"#),
        ("nested 100,000 deep", String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)),
        ("a control character", #"[{"id":"\u001b[31m","message":"\u001b]0;x\u0007"}]"#),
    ]

    @Test("a read answered with a hostile body throws a RemoteStoreError", arguments: reads.indices, bodies.indices)
    func hostileBody(read: Int, body: Int) async throws {
        let (name, call) = Self.reads[read]
        let (kind, text) = Self.bodies[body]
        let server = try LoopbackHTTPServer { _ in
            TransportResponse(
                status: 200, headers: ["content-type": "application/json", "content-range": "0-0/1"],
                body: Data(text.utf8))
        }
        defer { server.stop() }
        do {
            try await call(makeClient(server))
            Issue.record("\(name) accepted \(kind)")
        } catch let error as RemoteStoreError {
            #expect(!error.description.contains("\u{1b}"), "\(name): a control character reached the description")
        } catch {
            Issue.record("\(name) threw \(type(of: error)) for \(kind), not a RemoteStoreError")
        }
    }
}
