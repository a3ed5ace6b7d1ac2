import CSodiumFloor
import Foundation
import SecretCrypto

/// Envelope v1 throughput beside the bare libsodium floor, measured in one run.
///
/// The floor (Sources/CSodiumFloor) makes the same libsodium calls as SecretCrypto's seal and
/// open, in plain C, with no Swift around them. Each run measures the floor and the Swift API
/// back to back, so machine noise hits both alike.
enum CryptoBench {
    struct Fixture: Sendable {
        let recipient = X25519PrivateKey()
        let sessionID = SessionID(UUID())
        let secret = SessionSecret()
        let sample: SecretEnvelope

        init() throws {
            sample = try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)
        }
    }

    enum Operation: CaseIterable {
        case swiftSeal, floorSeal, swiftOpen, floorOpen

        func run(_ count: Int, _ f: Fixture) {
            switch self {
            case .swiftSeal:
                for _ in 0..<count { _ = try! SecretEnvelope.seal(f.secret, for: f.recipient.publicKey, sessionID: f.sessionID) }
            case .swiftOpen:
                for _ in 0..<count { _ = try! f.sample.open(sessionID: f.sessionID, using: f.recipient) }
            case .floorSeal:
                let secret = f.secret.rawRepresentation.withUnsafeBytes { Array($0) }
                var eph = [CChar](repeating: 0, count: 45)
                var enc = [CChar](repeating: 0, count: 128)
                var sid = f.sessionID.canonical
                sid.withUTF8 { sid in
                    let id = UnsafeRawPointer(sid.baseAddress!).assumingMemoryBound(to: CChar.self)
                    for _ in 0..<count {
                        precondition(floor_envelope_seal(secret, f.recipient.publicKey.rawRepresentation, id, sid.count, &eph, eph.count, &enc, enc.count) == 0)
                    }
                }
            case .floorOpen:
                let key = f.recipient.rawRepresentation.withUnsafeBytes { Array($0) }
                var out = [UInt8](repeating: 0, count: 32)
                var sid = f.sessionID.canonical
                var eph = f.sample.ephemeralPublicKey
                var enc = f.sample.encryptedSecret
                let cast = { (p: UnsafeBufferPointer<UInt8>) in UnsafeRawPointer(p.baseAddress!).assumingMemoryBound(to: CChar.self) }
                sid.withUTF8 { sid in eph.withUTF8 { eph in enc.withUTF8 { enc in
                    for _ in 0..<count {
                        precondition(floor_envelope_open(cast(eph), eph.count, cast(enc), enc.count, key, cast(sid), sid.count, &out) == 0)
                    }
                } } }
            }
        }
    }

    /// Operations per second with `workers` tasks each doing `iterations`.
    static func throughput(_ operation: Operation, workers: Int, iterations: Int, _ fixture: Fixture) async -> Double {
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<workers {
                group.addTask { operation.run(iterations, fixture) }
            }
        }
        return Double(workers * iterations) / seconds(ContinuousClock.now - start)
    }

    static func run(iterations: Int, runs: Int) async {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let fixture = try! Fixture()
        print("crypto: envelope v1, \(iterations) operations per worker, median of \(runs) runs, \(cores) cores")
        var results: [String: [Double]] = [:]
        for operation in Operation.allCases { operation.run(200, fixture) }  // warm up
        for run in 1...runs {
            for workers in Set([1, cores]).sorted() {
                for operation in Operation.allCases {
                    results["\(operation)-\(workers)", default: []].append(await throughput(operation, workers: workers, iterations: iterations, fixture))
                }
            }
            progress("  crypto run \(run)/\(runs) done")
        }
        func row(_ name: String, _ swift: Operation, _ floor: Operation, _ workers: Int) -> String {
            let s = median(results["\(swift)-\(workers)"]!)
            let f = median(results["\(floor)-\(workers)"]!)
            return name.padding(toLength: 22, withPad: " ", startingAt: 0) + String(format: "%12.0f/s %12.0f/s %9.1f%%", s, f, 100 * s / f)
        }
        print("operation".padding(toLength: 22, withPad: " ", startingAt: 0) + "       Swift   libsodium floor   Swift/floor")
        print(row("seal, 1 core", .swiftSeal, .floorSeal, 1))
        print(row("open, 1 core", .swiftOpen, .floorOpen, 1))
        if cores > 1 {
            print(row("seal, \(cores) cores", .swiftSeal, .floorSeal, cores))
            print(row("open, \(cores) cores", .swiftOpen, .floorOpen, cores))
            let seal = median(results["swiftSeal-\(cores)"]!) / median(results["swiftSeal-1"]!)
            let open = median(results["swiftOpen-\(cores)"]!) / median(results["swiftOpen-1"]!)
            print(String(format: "all cores / one core: seal %.2fx, open %.2fx", seal, open))
        }
    }
}
