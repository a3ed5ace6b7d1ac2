import DeviceTrust
import Foundation
import GRDB
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

@testable import LocalStore
@testable import PostLoginSync

@Suite("Device trust on a remote without its tables")
struct TrustWithoutTablesTests {
    @Test(
        "a remote without the trust log keeps syncing in mode any, says so once, and trust init fails with trustUnavailable"
    )
    func withoutTables() async throws {
        let world = try World(.embedded)
        let phone = try await world.device("phone", role: .mobile)
        let desktop = try await world.desktop(sessions: 2)
        _ = try await phone.engine.pull()
        try await TrustThreatTests.asServiceRole(
            world,
            """
            DROP TABLE user_identity_keys; DROP TABLE device_certificates; DROP TABLE device_revocations; DROP TABLE pairing_requests;
            DROP TABLE trust_log; DROP TABLE trust_log_witnesses;
            """)
        let first = try await desktop.engine.push()
        #expect(
            first.outcome == .success && first.trust?.mode == .any
                && first.trust?.note?.contains("trust-log migration") == true)
        #expect(first.recipients.filter(\.receives).count == 2)
        let second = try await desktop.engine.push()
        #expect(second.outcome == .success && second.trust?.note == nil)
        await #expect {
            try await DeviceTrustManager(local: desktop.store, remote: try world.remote(for: desktop)).initialize()
        } throws: {
            ($0 as? SyncError)?.code == .trustUnavailable
        }
        #expect(try await desktop.store.identityKey() == nil)
        var verified = SyncOptions()
        verified.recipients.trust = .verified
        await #expect {
            try await SyncEngine(local: desktop.store, remote: try world.remote(for: desktop), options: verified).push()
        } throws: {
            ($0 as? SyncError)?.code == .noIdentity
        }
    }
}
