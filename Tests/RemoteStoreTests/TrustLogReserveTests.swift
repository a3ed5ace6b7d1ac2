import DeviceTrust
import EmbeddedRemote
import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

/// The last thousand places of an epoch (trust-log.md, E(f) and E(e)) on a remote that holds a
/// real 9,000-entry log: the reserve keeps room for the entries that take trust away or restore
/// it, and the bound is hard.
@Suite("The trust log's reserve and bound on the remote")
struct TrustLogReserveTests {
    /// A device the test can certify and later revoke.
    struct Device {
        let id = UUID()
        let x25519 = X25519PrivateKey()
        let ed25519 = Ed25519PrivateKey()
    }

    @Test(
        "from seq 9,000 a certify of another device is 55000; a revocation, a succession and a recovery's self-certify and self-grant go; seq 10,000 is 22023",
        arguments: RemoteKind.available)
    func reserveAndBound(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let user = UUID()
        var log = try RemoteLogWriter(user: user, recovery: nil)
        let remote = try TrustLogRemoteTests.remote(kind, harness, user: user)
        try await remote.startTrustLog(log.unsent())
        func certificate(_ device: Device, type: String = "ios-phone") -> DeviceCertificate {
            DeviceCertificate(
                userID: user, deviceID: device.id, x25519PublicKey: device.x25519.publicKey,
                ed25519PublicKey: device.ed25519.publicKey, deviceType: type, deviceRole: "trusted_executor",
                issuedAt: RemoteLogWriter.now)
        }
        func send(_ entries: [TrustLogWriter.Written]) async throws {
            for start in stride(from: 0, to: entries.count, by: 8) {
                let batch = entries[start..<min(start + 8, entries.count)]
                try await remote.appendTrustEntries(
                    epoch: 1, firstSeq: batch.first!.seq,
                    batch.map { TrustLogAppend(entry: $0.text, backup: $0.backup) })
            }
        }
        // 8,999 certifies of phones, sent eight at a time through the remote's own API, each eight
        // made just before they are sent: an entry's created_at must be within 600 s of the
        // server's clock when it arrives, and on a loaded machine the 1,125 requests took longer.
        var phones: [Device] = []
        while log.writer.state.headSeq < 8_999 {
            let from = log.writer.written.count
            while log.writer.state.headSeq < 8_999 && log.writer.written.count - from < 8 {
                let phone = Device()
                try log.writer.append(.certify(certificate(phone)), createdAt: RemoteLogWriter.now)
                phones.append(phone)
            }
            try await send(Array(log.writer.written[from...]))
        }
        log.sent = log.writer.written.count
        func code(_ text: String, seq: UInt64) async -> String? {
            await TrustLogRemoteTests.code {
                try await remote.appendTrustEntries(
                    epoch: 1, firstSeq: seq, [TrustLogAppend(entry: text, backup: nil)])
            }
        }
        // At seq 9,000 a certify of another device, correctly signed and proved: 55000.
        let stranger = Device()
        #expect(await code(log.craft(try certificate(stranger).body()), seq: 9_000) == "55000")
        // A revocation and a succession go.
        try log.writer.append(
            .revoke(
                DeviceRevocation(
                    userID: user, deviceID: phones[0].id, x25519PublicKey: phones[0].x25519.publicKey,
                    revokedAt: RemoteLogWriter.now)),
            createdAt: RemoteLogWriter.now)
        let next = Ed25519PrivateKey()
        try log.writer.succeed(
            to: next, reason: .seedSuspected, newRecoveryKey: nil, revocations: [], createdAt: RemoteLogWriter.now)
        try await send(Array(log.writer.written[log.sent...]))
        // A recovering desktop (not a root) certifies itself and grants itself the seed.
        let desktop = Device()
        var recovering = try TrustLogWriter(state: log.writer.state, identity: next, author: desktop.id)
        try recovering.append(.certify(certificate(desktop, type: "linux-desktop")), createdAt: RemoteLogWriter.now)
        try recovering.grantRoot(to: desktop.id, createdAt: RemoteLogWriter.now)
        try await send(recovering.written)
        // Revocations fill the epoch to seq 9,999; the 10,001st entry is refused: 22023.
        var filling = try TrustLogWriter(state: recovering.state, identity: next, author: log.root)
        var index = 1
        while filling.state.headSeq < 9_999 {
            let phone = phones[index]
            index += 1
            try filling.append(
                .revoke(
                    DeviceRevocation(
                        userID: user, deviceID: phone.id, x25519PublicKey: phone.x25519.publicKey,
                        revokedAt: RemoteLogWriter.now)),
                createdAt: RemoteLogWriter.now)
        }
        try await send(filling.written)
        let last = Device()
        var beyond = filling
        let revoke = DeviceRevocation(
            userID: user, deviceID: last.id, x25519PublicKey: last.x25519.publicKey, revokedAt: RemoteLogWriter.now
        ).body()
        var entry = TrustLogEntry(
            userID: user, epoch: 1, seq: 10_000, prev: Array(beyond.state.headHash), type: .revoke,
            createdAt: RemoteLogWriter.now, author: log.root,
            // The chain's next preimage, so that only the bound refuses it.
            appendProof: AppendChain.proof(
                seed: next.seedRepresentation, userID: user, epoch: 1,
                steps: Int(10_000 - beyond.state.identityKeySince)),
            body: revoke)
        entry.sign(identity: next)
        #expect(await code(entry.text, seq: 10_000) == "22023")
        #expect(throws: (any Error).self) {
            try beyond.append(
                .revoke(
                    DeviceRevocation(
                        userID: user, deviceID: last.id, x25519PublicKey: last.x25519.publicKey,
                        revokedAt: RemoteLogWriter.now)), createdAt: RemoteLogWriter.now)
        }
        // What the remote holds verifies from scratch: 10,000 entries, the recovering desktop a root.
        let rows = try await remote.trustLogRows(epoch: 1, fromSeq: 0)
        #expect(rows.count == 10_000)
        let state = try TrustLogVerifier.verify(rows.map(\.entry), userID: user, epoch: 1).state
        #expect(state.headSeq == 9_999 && state.isRoot(desktop.id))
    }
}
