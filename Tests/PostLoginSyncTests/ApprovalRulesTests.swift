import DeviceTrust
import Foundation
import GRDB
import Logging
import RemoteRules
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Synchronization
import Testing

@testable import EmbeddedRemote
@testable import LocalStore
@testable import PostLoginSync

@Suite("Approvals: the engine's own rules, the remote's shapes and the watch")
struct ApprovalRulesTests {
    static var remotes: [Backend] { Backend.available }

    @Test(
        "approvals need a pinned identity; content out of limits and a bad timeout are refused before anything is sent")
    func refusedBeforeSending() async throws {
        let world = try World(.embedded)
        let desktop = try await world.desktop(sessions: 1)
        let center = ApprovalCenter(local: desktop.store, remote: try world.remote(for: desktop))
        let session = try #require(try await desktop.store.sessions().first).id
        await #expect(throws: SyncError.self) { try await center.request(session: session, tool: "t", summary: "s") }
        do {
            _ = try await center.request(session: session, tool: "t", summary: "s")
        } catch let error as SyncError {
            #expect(error.code == .noIdentity && error.message.contains("pair your devices first"))
        }
        await #expect(throws: CryptoError.invalidApprovalContent) {
            try await center.request(session: session, tool: "", summary: "s")
        }
        await #expect(throws: CryptoError.invalidApprovalContent) {
            try await center.request(session: session, tool: "t", summary: "s", timeout: .seconds(4))
        }
        await #expect(throws: CryptoError.invalidApprovalContent) {
            try await center.request(session: session, tool: "t", summary: "line\nbreak")
        }
        #expect(try await world.remote().approvalRequests(status: nil).isEmpty)
    }

    @Test(
        "the remote refuses what the engine never sends: bad times, bodies, generations, verdicts, own answers",
        arguments: remotes)
    func remoteShapes(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let remote = try w.world.remote(for: w.desktop)
        let phoneRemote = try w.world.remote(for: w.phone)
        let session = try await w.session
        let now = UInt64(Date().timeIntervalSince1970)
        let body = ByteEncoding.base64([1, 0, 0, 0, 1] + [UInt8](repeating: 3, count: 60))
        let desktop = w.desktop.identity.id
        /// Refused with `code`; for a new request's field, in the rule's words on both remotes.
        func refused(
            _ name: String, _ code: RemoteStoreError.Code, field: RequestRules.Refusal? = nil,
            _ call: () async throws -> Void
        ) async {
            do {
                try await call()
                Issue.record("\(name): accepted")
            } catch let error as RemoteStoreError {
                #expect(error.code == code, "\(name): \(error)")
                if let field {
                    let words = RequestRules.NewRequestRefusal(.approval, field)
                    #expect((error.serverMessage ?? error.message) == words.message, "\(name): \(error)")
                    #expect(error.postgrestCode?.rawValue == words.sqlState, "\(name): \(error)")
                }
            } catch {
                Issue.record("\(name): \(error)")
            }
        }
        // The times are taken at each call: one taken once went stale under load, and "601 s"
        // arrived as 599. "610 s" keeps a margin for a slow request.
        for (name, offset) in [("4 s", 3), ("610 s", 610), ("past", -10)] {
            await refused(name, .invalidValue, field: .expiresAt) {
                _ = try await remote.requestApproval(
                    sessionID: session, requestID: UUID(), requesterDeviceID: desktop, body: body, generation: 1,
                    expiresAt: UInt64(Int64(Date().timeIntervalSince1970) + Int64(offset)))
            }
        }
        // The ends of the range: refused as times, never a trap or an overflow (a review found
        // UInt64.max trapping the embedded remote). Beyond Int64.max PostgREST refuses the
        // argument itself before any rule.
        let extremes: [UInt64] = [0, UInt64(Int64.max)] + (backend == .embedded ? [UInt64.max] : [])
        for expiresAt in extremes {
            await refused(
                "expires_at \(expiresAt)", .invalidValue, field: expiresAt > UInt64(Int64.max) ? nil : .expiresAt
            ) {
                _ = try await remote.requestApproval(
                    sessionID: session, requestID: UUID(), requesterDeviceID: desktop, body: body, generation: 1,
                    expiresAt: expiresAt)
            }
        }
        for (name, text) in [
            ("unpadded", String(body.dropLast())),
            ("generation 2 in the body", ByteEncoding.base64([1, 0, 0, 0, 2] + [UInt8](repeating: 3, count: 60))),
            ("version 2", ByteEncoding.base64([2, 0, 0, 0, 1] + [UInt8](repeating: 3, count: 60))),
            ("short", ByteEncoding.base64([1, 0, 0, 0, 1, 0])),
            ("line break", String(body.prefix(8)) + "\n" + String(body.dropFirst(8))),
        ] {
            await refused(name, .invalidValue, field: .body) {
                _ = try await remote.requestApproval(
                    sessionID: session, requestID: UUID(), requesterDeviceID: desktop, body: text, generation: 1,
                    expiresAt: now + 60)
            }
        }
        await refused("generation 0", .invalidValue, field: .generation) {
            _ = try await remote.requestApproval(
                sessionID: session, requestID: UUID(), requesterDeviceID: desktop, body: body, generation: 0,
                expiresAt: now + 60)
        }
        let id = UUID()
        let first = try await remote.requestApproval(
            sessionID: session, requestID: id, requesterDeviceID: desktop, body: body, generation: 1,
            expiresAt: now + 60)
        #expect(first.devicesNotified == 2)
        let again = try await remote.requestApproval(
            sessionID: session, requestID: id, requesterDeviceID: desktop, body: body, generation: 1,
            expiresAt: now + 60)
        #expect(again == first, "idempotent")
        await refused("another body under the id", .conflict) {
            _ = try await remote.requestApproval(
                sessionID: session, requestID: id, requesterDeviceID: desktop,
                body: ByteEncoding.base64([1, 0, 0, 0, 1] + [UInt8](repeating: 4, count: 60)), generation: 1,
                expiresAt: now + 60)
        }
        let decision = ByteEncoding.base64([UInt8](repeating: 7, count: 29 + 4 * 37 + 1 + 32 + 32 + 8 + 44))
        let signature = ByteEncoding.base64([UInt8](repeating: 9, count: 64))
        await refused("own request", .invalidValue) {
            _ = try await remote.answerApproval(
                requestID: id, deviceID: desktop, verdict: .approve, decisionBody: decision,
                decisionSignature: signature)
        }
        await refused("short decision", .invalidValue) {
            _ = try await phoneRemote.answerApproval(
                requestID: id, deviceID: w.phone.identity.id, verdict: .approve, decisionBody: "AAAA",
                decisionSignature: signature)
        }
        await refused("63-byte signature", .invalidValue) {
            _ = try await phoneRemote.answerApproval(
                requestID: id, deviceID: w.phone.identity.id, verdict: .approve, decisionBody: decision,
                decisionSignature: ByteEncoding.base64([UInt8](repeating: 9, count: 63)))
        }
        #expect(try await remote.approvalRequest(id: id)?.status == .pending)
    }

    @Test("a remote without the approvals migration says so")
    func deployedWithout() async throws {
        guard !StackEnvironment.skipped else { return }
        let world = try World(.postgrest, deployedSchema: true)
        let desktop = try await world.desktop(sessions: 1)
        let root = DeviceTrustManager(local: desktop.store, remote: try world.remote(for: desktop))
        try await root.initialize()
        root.recoveryKeyShown()
        #expect(try await desktop.engine.push().outcome == .success)
        let center = ApprovalCenter(local: desktop.store, remote: try world.remote(for: desktop))
        let session = try #require(try await desktop.store.sessions().first).id
        await #expect(throws: RemoteStoreError.self) {
            try await center.request(session: session, tool: "t", summary: "s")
        }
        do {
            _ = try await center.request(session: session, tool: "t", summary: "s")
        } catch let error as RemoteStoreError {
            #expect(error.code == .missingFunction)
        }
    }

    @Test(
        "watch ticks surface a new request on the phone and its answer on the desktop, from the change feed",
        arguments: remotes)
    func watchSurfaces(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        var desktopWatch = w.desktop.engine.watch(ApprovalWorld.fastWatch).makeAsyncIterator()
        var phoneWatch = w.phone.engine.watch(ApprovalWorld.fastWatch).makeAsyncIterator()
        _ = await desktopWatch.next()
        _ = await phoneWatch.next()
        let quiet = try #require(await desktopWatch.next())
        #expect(quiet.action == .quiet && quiet.approvals == nil)
        let (task, row) = try await w.ask()
        let seen = try #require(await phoneWatch.next())
        #expect(
            seen.approvals == [
                WatchApproval(requestId: row.id, sessionId: row.sessionID, status: .pending, asked: false)
            ])
        #expect(try #require(await phoneWatch.next()).approvals == nil, "surfaced once")
        let asked = try #require(await desktopWatch.next())
        #expect(asked.approvals?.first?.asked == true)
        _ = try await w.center(w.phone).answer(w.center(w.phone).open(row), verdict: .approve)
        _ = try await task.value
        let answered = try #require(await desktopWatch.next())
        #expect(answered.approvals?.map(\.status) == [.approved])
        if backend == .postgrest {
            #expect(answered.action == .quiet && answered.requests == 2, "the feed and the heartbeat, nothing more")
        }
    }
}
