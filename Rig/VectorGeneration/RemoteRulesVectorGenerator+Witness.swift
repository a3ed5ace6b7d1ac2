import ConformanceVectors
import DeviceTrust
import Foundation
import RemoteRules
import SecretCrypto

/// The WitnessAdmission group: which witness the remote keeps (``WitnessRules``, after
/// `TrustLogWitness.parse`).
extension RemoteRulesVectorGenerator {
    /// The server's clock in every test: before any machine's today, so that the SQL check, which
    /// moves each witness's time onto its own clock, never makes a time negative.
    static let witnessNow: Int64 = 1_700_000_000
    static let witnessUser = UUID(uuidString: "11111111-1111-4111-8111-111111111111")!
    static let witnessDevice = UUID(uuidString: "22222222-2222-4222-8222-222222222222")!
    static let otherWitnessUser = UUID(uuidString: "33333333-3333-4333-8333-333333333333")!
    static let otherWitnessDevice = UUID(uuidString: "44444444-4444-4444-8444-444444444444")!

    /// A 64-byte signature as stored, told apart by its bytes (the server never verifies one).
    static func witnessSignature(_ tag: UInt8, count: Int = 64) -> String {
        ByteEncoding.base64([UInt8](repeating: tag, count: count))
    }

    /// The caller's device witnessing seq 5 of epoch 2 now, with the head at 7.
    struct WitnessCase {
        var comment: String
        var flags: [String]
        var user = witnessUser
        var device = witnessDevice
        var epoch: UInt32 = 2
        var seq: UInt64 = 5
        var seenOffset: Int64 = 0
        var seenAt: UInt64?
        var edit: ([UInt8]) -> [UInt8] = { $0 }
        var text: (String) -> String = { $0 }
        var signature = witnessSignature(0x10)
        var currentEpoch: UInt32? = 2
        var headSeq: UInt64? = 7
        var held: [WitnessRules.Held] = []
        /// Witnesses the device holds of epoch 1 (the current one is 2).
        var earlier: [WitnessRules.Held] = []

        init(_ comment: String, _ flags: [String]) { (self.comment, self.flags) = (comment, flags) }
    }

    static func witnessAdmissionTests() -> [OutputTest] {
        (witnessShapeCases() + witnessRangeCases() + witnessRetentionCases()).map(witnessTest)
    }

    /// Bodies and signatures the server must refuse before it reads anything else.
    static func witnessShapeCases() -> [WitnessCase] {
        func flawed(_ comment: String, _ flag: String, _ change: (inout WitnessCase) -> Void) -> WitnessCase {
            var test = WitnessCase(comment, [flag])
            change(&test)
            return test
        }
        func upper(_ range: Range<Int>) -> ([UInt8]) -> [UInt8] {
            { bytes in
                var bytes = bytes
                for index in range where bytes[index] >= 0x61 && bytes[index] <= 0x66 { bytes[index] -= 0x20 }
                return bytes
            }
        }
        return [
            flawed("another prefix", "Shape") { $0.edit = { $0.with(27, 0x32) } },
            flawed("no NUL after the prefix", "Shape") { $0.edit = { $0.with(28, 0x20) } },
            flawed("no NUL after the user", "Shape") { $0.edit = { $0.with(65, 0x01) } },
            flawed("no NUL after the device", "Shape") { $0.edit = { $0.with(102, 0x01) } },
            flawed("the user's id in capitals", "Shape") {
                $0.user = UUID(uuidString: "aaaaaaaa-1111-4111-8111-111111111111")!
                $0.edit = upper(29..<65)
            },
            flawed("the device's id in capitals", "Shape") {
                $0.device = UUID(uuidString: "aaaaaaaa-2222-4222-8222-222222222222")!
                $0.edit = upper(66..<102)
            },
            flawed("the user's id is not a UUID", "Shape") { $0.edit = { $0.with(64, 0x67) } },
            flawed("the device's id has no dashes", "Shape") { $0.edit = { $0.with(74, 0x30) } },
            flawed("epoch 0", "Shape") { ($0.epoch, $0.currentEpoch) = (0, 0) },
            flawed("seq 10,000", "Shape") { ($0.seq, $0.headSeq) = (10_000, 10_000) },
            flawed("a time of 2^63", "Shape") { $0.seenAt = 1 << 63 },
            flawed("154 bytes", "Shape") { $0.edit = { Array($0.dropLast()) } },
            flawed("156 bytes", "Shape") { $0.edit = { $0 + [0] } },
            flawed("the body without its padding", "Encoding") { $0.text = { String($0.dropLast()) } },
            flawed("the body with a newline", "Encoding") { $0.text = { $0 + "\n" } },
            flawed("the body in base64url", "Encoding") {
                $0.edit = { $0.with(120, 0xFB) }
                $0.text = { $0.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") }
            },
            flawed("a 63-byte signature", "Signature") { $0.signature = witnessSignature(0x10, count: 63) },
            flawed("a 65-byte signature", "Signature") { $0.signature = witnessSignature(0x10, count: 65) },
            flawed("a signature without its padding", "Signature") { $0.signature.removeLast() },
            flawed("an empty signature", "Signature") { $0.signature = "" },
            flawed("another user's witness in capitals", "Shape") {
                $0.user = UUID(uuidString: "aaaaaaaa-3333-4333-8333-333333333333")!
                $0.edit = upper(29..<65)
            },
        ]
    }

    /// Whose witness it is, and where it stands against the log and the clock.
    static func witnessRangeCases() -> [WitnessCase] {
        func make(_ comment: String, _ flags: [String], _ change: (inout WitnessCase) -> Void) -> WitnessCase {
            var test = WitnessCase(comment, flags)
            change(&test)
            return test
        }
        var cases = [
            make("the caller's own witness", ["Kept"]) { _ in },
            make("another user's", ["Foreign"]) { $0.user = otherWitnessUser },
            make("another device's of the caller's", ["Foreign"]) { $0.device = otherWitnessDevice },
            make("another user's device's", ["Foreign"]) {
                ($0.user, $0.device) = (otherWitnessUser, otherWitnessDevice)
            },
            make("another device's, past the head", ["Foreign"]) { ($0.device, $0.seq) = (otherWitnessDevice, 9) },
            make("no log", ["Range"]) { ($0.currentEpoch, $0.headSeq) = (nil, nil) },
            make("a current epoch without its head (a restore could leave one)", ["Range"]) { $0.headSeq = nil },
            make("an earlier epoch", ["Range"]) { $0.epoch = 1 },
            make("a later epoch", ["Range"]) { $0.epoch = 3 },
            make("the head's seq", ["Kept"]) { $0.seq = 7 },
            make("past the head", ["Range"]) { $0.seq = 8 },
            make("the last seq there can be, past the head", ["Range"]) { $0.seq = 9_999 },
            make("seq 0", ["Kept"]) { $0.seq = 0 },
            make("below the device's last", ["Range"]) {
                $0.held = [.init(seq: 6, signature: witnessSignature(0x20), age: 60)]
            },
            make("at the device's last", ["Kept"]) {
                $0.held = [.init(seq: 5, signature: witnessSignature(0x20), age: 60)]
            },
            make("above the device's last", ["Kept"]) {
                $0.held = [.init(seq: 3, signature: witnessSignature(0x20), age: 60)]
            },
            make("in 1970", ["Range", "Clock"]) { $0.seenAt = 0 },
            make("below the device's last of an earlier epoch, which counts for nothing", ["Kept"]) {
                $0.earlier = [.init(seq: 9, signature: witnessSignature(0x20), age: 60)]
            },
            make("the same signature held of an earlier epoch", ["Kept"]) {
                $0.earlier = [.init(seq: 5, signature: witnessSignature(0x10), age: 60)]
            },
        ]
        for offset: Int64 in [-86_400, -601, -600, -1, 1, 600, 601, 86_400] {
            let kept = abs(offset) <= WitnessRules.clockSlack
            cases.append(
                make("seen \(offset) s from the server's clock", [kept ? "Kept" : "Range", "Clock"]) {
                    $0.seenOffset = offset
                })
        }
        return cases
    }

    /// What stays of the device's witnesses of a seq: at most four, the newest.
    static func witnessRetentionCases() -> [WitnessCase] {
        func holding(_ comment: String, _ held: [(UInt64, UInt8, Double)], signature: UInt8 = 0x10) -> WitnessCase {
            var test = WitnessCase(comment, ["Retention"])
            test.held = held.map { .init(seq: $0.0, signature: witnessSignature($0.1), age: $0.2) }
            test.signature = witnessSignature(signature)
            return test
        }
        return [
            holding("one held of the seq", [(5, 0x20, 3600)]),
            holding("three held of the seq", [(5, 0x20, 30), (5, 0x24, 3600), (5, 0x28, 7200)]),
            holding(
                "four held of the seq: the oldest gives way",
                [(5, 0x20, 30), (5, 0x24, 7200), (5, 0x28, 3600), (5, 0x2C, 60)]),
            holding(
                "six held of the seq (a server that kept more): three stay",
                [(5, 0x20, 1), (5, 0x24, 2), (5, 0x28, 3), (5, 0x2C, 4), (5, 0x30, 5), (5, 0x34, 6)]),
            holding("the same witness held: nothing changes", [(5, 0x10, 3600)]),
            holding(
                "the same witness among four held: nothing changes",
                [(5, 0x20, 30), (5, 0x10, 7200), (5, 0x28, 3600), (5, 0x2C, 60)]),
            holding("the same signature held of an earlier seq", [(4, 0x10, 60)]),
            holding(
                "four held of the seq, the oldest's signature held of an earlier seq too: that one stays",
                [(5, 0x20, 30), (5, 0x24, 7200), (5, 0x28, 3600), (5, 0x2C, 60), (4, 0x24, 60)]),
            holding(
                "four held of earlier seqs: none counts for this one",
                [(1, 0x20, 60), (2, 0x24, 60), (3, 0x28, 60), (4, 0x2C, 60)]),
            holding(
                "four held of the seq, two of them equally old: the lower signature stays",
                [(5, 0x20, 60), (5, 0x24, 60), (5, 0x68, 3600), (5, 0x00, 3600)]),
            holding(
                "four held of the seq, all equally old: the three lowest signatures, byte by byte, stay",
                [(5, 0x68, 60), (5, 0x00, 60), (5, 0x08, 60), (5, 0x04, 60)]),
        ]
    }

    static func witnessTest(_ spec: WitnessCase) -> OutputTest {
        let seen = spec.seenAt ?? UInt64(witnessNow + spec.seenOffset)
        let witness = TrustLogWitness(
            userID: spec.user, deviceID: spec.device, epoch: spec.epoch, seq: spec.seq,
            entryHash: [UInt8](repeating: 0xAB, count: 32), seenAt: seen)
        let body = spec.text(ByteEncoding.base64(spec.edit(witness.bytes())))
        var test = OutputTest(comment: spec.comment, flags: spec.flags)
        (test.caller, test.device, test.body, test.signature, test.now) = (
            witnessUser.canonical, witnessDevice.canonical, body, spec.signature, witnessNow
        )
        (test.currentEpoch, test.headSeq, test.held) = (
            spec.currentEpoch, spec.headSeq,
            spec.held.map { RemoteRulesGroup.HeldWitness($0) } + spec.earlier.map { .init($0, epoch: 1) }
        )
        let answer = RemoteRulesGroup.witnessAdmission(
            .init(
                caller: test.caller, device: test.device, body: body, signature: spec.signature, now: witnessNow,
                currentEpoch: spec.currentEpoch, headSeq: spec.headSeq, held: test.held))
        (test.admission, test.kept) = (answer?.admission, answer?.kept)
        return test
    }
}

extension [UInt8] {
    /// The bytes with one of them changed.
    fileprivate func with(_ index: Int, _ value: UInt8) -> [UInt8] {
        var bytes = self
        bytes[index] = value
        return bytes
    }
}

extension UUID {
    fileprivate var canonical: String { uuidString.lowercased() }
}
