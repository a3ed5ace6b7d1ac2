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
        let sender = X25519PrivateKey()
        let recipientID = UUID()
        let senderID = UUID()
        let sessionID = SessionID(UUID())
        let secret = SessionSecret()
        let sample: SecretEnvelope
        let sampleV2: SecretEnvelope

        init() throws {
            sample = try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)
            sampleV2 = try SecretEnvelope.sealV2(
                secret, for: recipient.publicKey, recipientDeviceID: recipientID, sessionID: sessionID,
                sender: sender, senderDeviceID: senderID, generation: 1)
        }

        func resolve(_ id: UUID) -> X25519PublicKey? { id == senderID ? sender.publicKey : nil }

        /// The floor's v2 seal, for checking that it does the same work (its output must open in Swift).
        func floorSealV2() -> SecretEnvelope {
            var eph = [CChar](repeating: 0, count: 45)
            var enc = [CChar](repeating: 0, count: 160)
            FloorV2(self).seal(&eph, &enc)
            func text(_ bytes: [CChar]) -> String {
                String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            return SecretEnvelope(ephemeralPublicKey: "v2:" + text(eph), encryptedSecret: text(enc))
        }
    }

    /// The inputs of the C floor for v2, prepared once.
    struct FloorV2 {
        let plaintext: [UInt8], recipientPK: [UInt8], recipientSK: [UInt8], senderSK: [UInt8], senderPK: [UInt8],
            senderRaw: [UInt8]
        /// DH(skS, pkR), computed once: the engine keeps it per recipient for a whole push.
        let staticDH: [UInt8]
        let session: [CChar], sender: [CChar], recipient: [CChar]

        init(_ f: Fixture) {
            floor_v2_prepare()
            plaintext = Array(f.secret.revealTextForm().utf8)
            recipientPK = f.recipient.publicKey.rawRepresentation
            recipientSK = f.recipient.rawRepresentation.withUnsafeBytes { Array($0) }
            senderSK = f.sender.rawRepresentation.withUnsafeBytes { Array($0) }
            senderPK = f.sender.publicKey.rawRepresentation
            senderRaw = withUnsafeBytes(of: f.senderID.uuid) { Array($0) }
            session = f.sessionID.canonical.utf8CString.dropLast().map { $0 }
            sender = f.senderID.uuidString.lowercased().utf8CString.dropLast().map { $0 }
            recipient = f.recipientID.uuidString.lowercased().utf8CString.dropLast().map { $0 }
            staticDH = try! f.sender.sharedSecret(with: f.recipient.publicKey).withUnsafeBytes { Array($0) }
        }

        func seal(_ eph: inout [CChar], _ enc: inout [CChar]) {
            precondition(
                floor_envelope_v2_seal(
                    plaintext, recipientPK, senderSK, senderPK, session, sender, recipient, senderRaw, 1,
                    staticDH, &eph, eph.count, &enc, enc.count) == 0)
        }
    }

    enum Operation: CaseIterable {
        case swiftSeal, floorSeal, swiftOpen, floorOpen, swiftSealV2, floorSealV2, swiftOpenV2, floorOpenV2

        func run(_ count: Int, _ f: Fixture) {
            switch self {
            case .swiftSeal:
                for _ in 0..<count {
                    _ = try! SecretEnvelope.seal(f.secret, for: f.recipient.publicKey, sessionID: f.sessionID)
                }
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
                        precondition(
                            floor_envelope_seal(
                                secret, f.recipient.publicKey.rawRepresentation, id, sid.count, &eph, eph.count, &enc,
                                enc.count) == 0)
                    }
                }
            case .swiftSealV2:
                // As a push seals: the static exchange kept per recipient.
                var exchanges = RecipientExchanges()
                for _ in 0..<count {
                    _ = try! SecretEnvelope.sealV2(
                        f.secret, for: f.recipient.publicKey, recipientDeviceID: f.recipientID, sessionID: f.sessionID,
                        sender: f.sender, senderDeviceID: f.senderID, generation: 1, exchanges: &exchanges)
                }
            case .swiftOpenV2:
                for _ in 0..<count {
                    _ = try! f.sampleV2.open(
                        sessionID: f.sessionID, recipientDeviceID: f.recipientID, using: f.recipient,
                        senderKey: f.resolve)
                }
            case .floorSealV2:
                let floor = FloorV2(f)
                var eph = [CChar](repeating: 0, count: 45)
                var enc = [CChar](repeating: 0, count: 160)
                for _ in 0..<count { floor.seal(&eph, &enc) }
            case .floorOpenV2:
                let floor = FloorV2(f)
                var out = [UInt8](repeating: 0, count: 48)
                var eph = f.sampleV2.ephemeralPublicKey
                var enc = f.sampleV2.encryptedSecret
                let cast = { (p: UnsafeBufferPointer<UInt8>) in
                    UnsafeRawPointer(p.baseAddress!).assumingMemoryBound(to: CChar.self)
                }
                eph.withUTF8 { eph in
                    enc.withUTF8 { enc in
                        for _ in 0..<count {
                            precondition(
                                floor_envelope_v2_open(
                                    cast(eph), eph.count, cast(enc), enc.count, floor.recipientSK, floor.recipientPK,
                                    floor.senderPK, floor.session, floor.recipient, &out) == 0)
                        }
                    }
                }
            case .floorOpen:
                let key = f.recipient.rawRepresentation.withUnsafeBytes { Array($0) }
                var out = [UInt8](repeating: 0, count: 32)
                var sid = f.sessionID.canonical
                var eph = f.sample.ephemeralPublicKey
                var enc = f.sample.encryptedSecret
                let cast = { (p: UnsafeBufferPointer<UInt8>) in
                    UnsafeRawPointer(p.baseAddress!).assumingMemoryBound(to: CChar.self)
                }
                sid.withUTF8 { sid in
                    eph.withUTF8 { eph in
                        enc.withUTF8 { enc in
                            for _ in 0..<count {
                                precondition(
                                    floor_envelope_open(
                                        cast(eph), eph.count, cast(enc), enc.count, key, cast(sid), sid.count, &out)
                                        == 0)
                            }
                        }
                    }
                }
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
        print(
            "crypto: envelopes v1 and v2, \(iterations) operations per worker, median of \(runs) runs, \(cores) cores")
        // The floor must do the same work: its v2 envelope opens with SecretCrypto.
        let check = fixture.floorSealV2()
        precondition(
            (try? check.open(
                sessionID: fixture.sessionID, recipientDeviceID: fixture.recipientID, using: fixture.recipient,
                senderKey: fixture.resolve))?.secret == fixture.secret, "the C floor's v2 envelope does not open")
        var results: [String: [Double]] = [:]
        for operation in Operation.allCases { operation.run(200, fixture) } // warm up
        for run in 1...runs {
            for workers in Set([1, cores]).sorted() {
                for operation in Operation.allCases {
                    results["\(operation)-\(workers)", default: []].append(
                        await throughput(operation, workers: workers, iterations: iterations, fixture))
                }
            }
            progress("  crypto run \(run)/\(runs) done")
        }
        func row(_ name: String, _ swift: Operation, _ floor: Operation, _ workers: Int) -> String {
            let s = median(results["\(swift)-\(workers)"]!)
            let f = median(results["\(floor)-\(workers)"]!)
            return name.padding(toLength: 22, withPad: " ", startingAt: 0)
                + String(format: "%12.0f/s %12.0f/s %9.1f%%", s, f, 100 * s / f)
        }
        print(
            "operation".padding(toLength: 22, withPad: " ", startingAt: 0)
                + "       Swift   libsodium floor   Swift/floor")
        print(row("v1 seal, 1 core", .swiftSeal, .floorSeal, 1))
        print(row("v1 open, 1 core", .swiftOpen, .floorOpen, 1))
        print(row("v2 seal, 1 core", .swiftSealV2, .floorSealV2, 1))
        print(row("v2 open, 1 core", .swiftOpenV2, .floorOpenV2, 1))
        let v2PerV1 = median(results["swiftSealV2-1"]!) / median(results["swiftSeal-1"]!)
        print(
            String(
                format: "v2 seal / v1 seal, 1 core (Swift, exchange kept per recipient): %.2f (target >= 0.95)",
                v2PerV1))
        if cores > 1 {
            print(row("v1 seal, \(cores) cores", .swiftSeal, .floorSeal, cores))
            print(row("v1 open, \(cores) cores", .swiftOpen, .floorOpen, cores))
            print(row("v2 seal, \(cores) cores", .swiftSealV2, .floorSealV2, cores))
            print(row("v2 open, \(cores) cores", .swiftOpenV2, .floorOpenV2, cores))
            let seal = median(results["swiftSeal-\(cores)"]!) / median(results["swiftSeal-1"]!)
            let open = median(results["swiftOpen-\(cores)"]!) / median(results["swiftOpen-1"]!)
            print(String(format: "all cores / one core: seal %.2fx, open %.2fx", seal, open))
        }
    }
}
