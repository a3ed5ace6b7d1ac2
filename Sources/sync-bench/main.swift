import CSodiumFloor
import Foundation
import SecretCrypto

// Envelope v1 throughput beside the bare libsodium floor, measured in one run.
//
// The floor (Sources/CSodiumFloor) makes the same libsodium calls as SecretCrypto's seal and
// open, in plain C, with no Swift around them. Each run measures the floor and the Swift API
// back to back, so machine noise hits both alike; the table shows medians.

struct Options {
    var iterations = 5_000
    var runs = 5

    init(_ arguments: [String]) {
        var rest = arguments.dropFirst()
        while let flag = rest.popFirst() {
            switch flag {
            case "--iterations": iterations = Int(rest.popFirst() ?? "") ?? iterations
            case "--runs": runs = Int(rest.popFirst() ?? "") ?? runs
            case "-h", "--help":
                print("""
                    usage: sync-bench [--iterations N] [--runs R]
                      Envelope v1 seals/s and opens/s, on one core and on all cores, beside the
                      libsodium floor (same calls in C). Medians of R runs of N operations per core.
                    """)
                exit(0)
            default:
                FileHandle.standardError.write(Data("sync-bench: unknown argument \(flag)\n".utf8))
                exit(64)
            }
        }
    }
}

let options = Options(CommandLine.arguments)
let cores = ProcessInfo.processInfo.activeProcessorCount
let recipient = X25519PrivateKey()
let recipientPublic = recipient.publicKey.rawRepresentation
let recipientSecret = recipient.rawRepresentation.withUnsafeBytes { Array($0) }
let sessionID = SessionID(UUID())
let secret = SessionSecret()
let secretRaw = secret.rawRepresentation.withUnsafeBytes { Array($0) }
let sample = try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)

/// One worker's loop for each measured operation.
enum Operation: CaseIterable {
    case swiftSeal, floorSeal, swiftOpen, floorOpen

    func run(_ count: Int) {
        switch self {
        case .swiftSeal:
            for _ in 0..<count { _ = try! SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID) }
        case .floorSeal:
            var eph = [CChar](repeating: 0, count: 45)
            var enc = [CChar](repeating: 0, count: 128)
            var sid = sessionID.canonical
            sid.withUTF8 { sid in
                for _ in 0..<count {
                    let rc = floor_envelope_seal(secretRaw, recipientPublic, sid.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, sid.count, &eph, eph.count, &enc, enc.count)
                    precondition(rc == 0)
                }
            }
        case .swiftOpen:
            for _ in 0..<count { _ = try! sample.open(sessionID: sessionID, using: recipient) }
        case .floorOpen:
            var out = [UInt8](repeating: 0, count: 32)
            var sid = sessionID.canonical
            var eph = sample.ephemeralPublicKey
            var enc = sample.encryptedSecret
            sid.withUTF8 { sid in eph.withUTF8 { eph in enc.withUTF8 { enc in
                let cast = { (p: UnsafeBufferPointer<UInt8>) in UnsafeRawPointer(p.baseAddress!).assumingMemoryBound(to: CChar.self) }
                for _ in 0..<count {
                    let rc = floor_envelope_open(cast(eph), eph.count, cast(enc), enc.count, recipientSecret, cast(sid), sid.count, &out)
                    precondition(rc == 0)
                }
            } } }
        }
    }
}

/// Operations per second with `workers` threads each doing `options.iterations`.
func throughput(_ operation: Operation, workers: Int) async -> Double {
    let start = ContinuousClock.now
    await withTaskGroup(of: Void.self) { group in
        for _ in 0..<workers {
            group.addTask { operation.run(options.iterations) }
        }
    }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    return Double(workers * options.iterations) / seconds
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

#if DEBUG
print("warning: debug build; run `swift run -c release sync-bench` for real figures")
#endif
print("sync-bench: envelope v1, \(options.iterations) operations per worker, median of \(options.runs) runs, \(cores) cores")

var results: [String: [Double]] = [:]
for operation in Operation.allCases { operation.run(200) }  // warm up
for run in 1...options.runs {
    for workers in Set([1, cores]).sorted() {
        for operation in Operation.allCases {
            results["\(operation)-\(workers)", default: []].append(await throughput(operation, workers: workers))
        }
    }
    FileHandle.standardError.write(Data("  run \(run)/\(options.runs) done\n".utf8))
}

@MainActor func row(_ name: String, _ swift: Operation, _ floor: Operation, _ workers: Int) -> String {
    let s = median(results["\(swift)-\(workers)"]!)
    let f = median(results["\(floor)-\(workers)"]!)
    return name.padding(toLength: 22, withPad: " ", startingAt: 0)
        + String(format: "%12.0f/s %12.0f/s %9.1f%%", s, f, 100 * s / f)
}

print("operation".padding(toLength: 22, withPad: " ", startingAt: 0) + "       Swift   libsodium floor   Swift/floor")
print(row("seal, 1 core", .swiftSeal, .floorSeal, 1))
print(row("open, 1 core", .swiftOpen, .floorOpen, 1))
if cores > 1 {
    print(row("seal, \(cores) cores", .swiftSeal, .floorSeal, cores))
    print(row("open, \(cores) cores", .swiftOpen, .floorOpen, cores))
    let scaleSeal = median(results["swiftSeal-\(cores)"]!) / median(results["swiftSeal-1"]!)
    let scaleOpen = median(results["swiftOpen-\(cores)"]!) / median(results["swiftOpen-1"]!)
    print(String(format: "all cores / one core: seal %.2fx, open %.2fx", scaleSeal, scaleOpen))
}
