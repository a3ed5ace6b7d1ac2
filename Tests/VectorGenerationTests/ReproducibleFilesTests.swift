import Foundation
import Testing
import VectorGeneration

/// The committed vector files are exactly what the generators write: anyone can regenerate them
/// (`make vectors`) and get the same bytes.
@Suite("The project's vector files are reproducible")
struct ReproducibleFilesTests {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "testvectors")

    static func committed(_ name: String) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent(name))
    }

    @Test("session-secret-v1.json is exactly what `sync-vectors generate` writes")
    func sessionSecretV1() throws {
        #expect(
            try Self.committed("session-secret-v1.json") == SessionSecretVectorGenerator.generate(),
            "run `make vectors`")
    }

    @Test("session-secret-v2.json is exactly what `sync-vectors generate --version 2` writes")
    func sessionSecretV2() throws {
        #expect(
            try Self.committed("session-secret-v2.json") == SessionSecretV2VectorGenerator.generate(),
            "run `make vectors`")
    }

    @Test("device-certificate-v1.json is exactly what `sync-vectors generate --kind certificate` writes")
    func deviceCertificate() throws {
        #expect(
            try Self.committed("device-certificate-v1.json") == DeviceCertificateVectorGenerator.generate(),
            "run `make vectors`")
    }

    @Test("approval-v1.json is exactly what `sync-vectors generate --kind approval` writes")
    func approval() throws {
        #expect(try Self.committed("approval-v1.json") == ApprovalVectorGenerator.generate(), "run `make vectors`")
    }

    @Test("question-v1.json is exactly what `sync-vectors generate --kind question` writes")
    func question() throws {
        #expect(try Self.committed("question-v1.json") == QuestionVectorGenerator.generate(), "run `make vectors`")
    }

    @Test("lockscreen-sanitiser-v2.json is exactly what `sync-vectors generate --kind lockscreen` writes")
    func lockScreen() throws {
        #expect(
            try Self.committed("lockscreen-sanitiser-v2.json") == LockScreenVectorGenerator.generate(),
            "run `make vectors`")
    }

    @Test("identity-backup-v1.json is exactly what `sync-vectors generate --kind backup` writes")
    func identityBackup() throws {
        #expect(
            try Self.committed("identity-backup-v1.json") == IdentityBackupVectorGenerator.generate(),
            "run `make vectors`")
    }

    @Test("pairing-v1.json is exactly what `sync-vectors generate --kind pairing` writes")
    func pairing() throws {
        #expect(try Self.committed("pairing-v1.json") == PairingVectorGenerator.generate(), "run `make vectors`")
    }

    @Test("trust-log-v1.json is exactly what `sync-vectors generate --kind trustlog` writes")
    func trustLog() throws {
        #expect(try Self.committed("trust-log-v1.json") == TrustLogVectorGenerator.generate(), "run `make vectors`")
    }

    @Test("remote-rules-v1.json is exactly what `sync-vectors generate --kind remoterules` writes")
    func remoteRules() throws {
        #expect(
            try Self.committed("remote-rules-v1.json") == RemoteRulesVectorGenerator.generate(), "run `make vectors`")
    }
}
