import Foundation
import SecretCrypto

/// The two crypto backends side by side, one core: envelope v1 and v2 seal and open, Ed25519
/// sign and verify. Figures only (the issue names no target beyond "say what they are").
enum BackendBench {
    struct Fixture {
        let recipient = X25519PrivateKey()
        let sender = X25519PrivateKey()
        let signer = Ed25519PrivateKey()
        let secret = SessionSecret()
        let session = SessionID(UUID())
        let senderID = UUID()
        let recipientID = UUID()
        let message = [UInt8](repeating: 0x61, count: 200)
    }

    enum Operation: String, CaseIterable {
        case sealV1 = "v1 seal", openV1 = "v1 open", sealV2 = "v2 seal", openV2 = "v2 open"
        case sign = "Ed25519 sign (200 B)", verify = "Ed25519 verify (200 B)"
    }

    /// Operations per second of `operation` on the current task's backend, `count` times.
    static func rate(_ operation: Operation, _ count: Int, _ f: Fixture) throws -> Double {
        let v1 = try SecretEnvelope.seal(f.secret, for: f.recipient.publicKey, sessionID: f.session)
        let v2 = try SecretEnvelope.sealV2(
            f.secret, for: f.recipient.publicKey, recipientDeviceID: f.recipientID, sessionID: f.session,
            sender: f.sender, senderDeviceID: f.senderID, generation: 1)
        let signature = f.signer.signature(for: f.message)
        let start = ContinuousClock.now
        for _ in 0..<count {
            switch operation {
            case .sealV1: _ = try SecretEnvelope.seal(f.secret, for: f.recipient.publicKey, sessionID: f.session)
            case .openV1: _ = try v1.open(sessionID: f.session, using: f.recipient)
            case .sealV2:
                _ = try SecretEnvelope.sealV2(
                    f.secret, for: f.recipient.publicKey, recipientDeviceID: f.recipientID, sessionID: f.session,
                    sender: f.sender, senderDeviceID: f.senderID, generation: 1)
            case .openV2:
                _ = try v2.open(
                    sessionID: f.session, recipientDeviceID: f.recipientID, using: f.recipient,
                    senderKey: { $0 == f.senderID ? f.sender.publicKey : nil })
            case .sign: _ = f.signer.signature(for: f.message)
            case .verify: precondition(f.signer.publicKey.isValidSignature(signature, for: f.message))
            }
        }
        return Double(count) / seconds(ContinuousClock.now - start)
    }

    static func run(iterations: Int, runs: Int) throws {
        let fixture = Fixture()
        let backends = CryptoBackend.available
        print("backends: \(iterations) operations per figure, one core, median of \(runs) runs")
        var results: [String: [Double]] = [:]
        for backend in backends {
            for operation in Operation.allCases {
                _ = try CryptoBackend.with(backend) { try rate(operation, 100, fixture) }
            }
        }
        for run in 1...runs {
            for backend in backends {
                for operation in Operation.allCases {
                    let figure = try CryptoBackend.with(backend) { try rate(operation, iterations, fixture) }
                    results["\(backend)-\(operation)", default: []].append(figure)
                }
            }
            progress("  backends run \(run)/\(runs) done")
        }
        print(
            "operation".padding(toLength: 24, withPad: " ", startingAt: 0)
                + backends.map { $0.rawValue.leftPadded(to: 16) }.joined() + "   swift-crypto/libsodium")
        for operation in Operation.allCases {
            let figures = backends.map { median(results["\($0)-\(operation)"]!) }
            let ratio = figures.count == 2 ? String(format: "%22.2f", figures[1] / figures[0]) : ""
            print(
                operation.rawValue.padding(toLength: 24, withPad: " ", startingAt: 0)
                    + figures.map { String(format: "%14.0f/s", $0) }.joined() + ratio)
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: " ", count: max(0, width - count)) + self
    }
}
