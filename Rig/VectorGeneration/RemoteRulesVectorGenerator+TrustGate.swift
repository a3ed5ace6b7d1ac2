import ConformanceVectors
import RemoteRules

/// The trust gate's groups: which epoch is in force, and whom its marks leave trusted
/// (``TrustGateRules``).
extension RemoteRulesVectorGenerator {
    /// Seconds since a pending reset was written: its clock ran ahead, just written, either side
    /// of the 72 hours and on them, a year.
    static let resetAges: [Int64] = [
        -3600, 0, TrustGateRules.resetDelay - 1, TrustGateRules.resetDelay,
        TrustGateRules.resetDelay + 1, 31_536_000,
    ]

    /// Every current epoch (none, one) against no pending reset and a pending one of every age.
    static func epochInForceTests() -> [OutputTest] {
        var tests: [OutputTest] = []
        for current in [nil, 1, 3] as [UInt32?] {
            for pending in [nil, 2, 4] as [UInt32?] {
                for age in pending == nil ? [nil] : resetAges.map(Optional.some) {
                    let reset = pending.flatMap { epoch in
                        age.map { TrustGateRules.PendingReset(epoch: epoch, age: $0) }
                    }
                    let inForce = TrustGateRules.epochInForce(current: current, pending: reset)
                    var flags = [inForce == nil ? "NoEpoch" : (inForce == pending ? "ResetTookEffect" : "Current")]
                    if let age, abs(age - TrustGateRules.resetDelay) <= 1 { flags.append("ResetEdge") }
                    if let age, age < 0 { flags.append("ClockAhead") }
                    let about = reset.map { "a reset to \($0.epoch) written \($0.age) s ago" } ?? "no pending reset"
                    var test = OutputTest(
                        comment: "current epoch \(current.map(String.init) ?? "none"), \(about)", flags: flags)
                    (test.currentEpoch, test.pendingEpoch, test.pendingAge, test.inForce) = (
                        current, pending, age, inForce
                    )
                    tests.append(test)
                }
            }
        }
        return tests
    }

    /// The device asked about, and another.
    static let gateDevice = "aaaaaaaa-0000-4000-8000-00000000000a"
    static let otherDevice = "bbbbbbbb-0000-4000-8000-00000000000b"

    /// Every sequence of up to two marks from the epoch in force (the device and another
    /// certified or revoked, an entry that does not parse) and from an earlier epoch, every
    /// sequence of three from the epoch in force, and a few without a log or with the earlier
    /// epoch in force.
    static func trustedDeviceTests() -> [OutputTest] {
        func marks(_ epoch: UInt32, devices: [String]) -> [TrustGateRules.Mark] {
            devices.flatMap { device in
                [false, true].map { TrustGateRules.Mark(epoch: epoch, device: device, revokes: $0) }
            }
                + [TrustGateRules.Mark(epoch: epoch, device: nil, revokes: true)]
        }
        let inForce = marks(2, devices: [gateDevice, otherDevice])
        let alphabet = inForce + marks(1, devices: [gateDevice])
        var sequences: [[TrustGateRules.Mark]] = [[]] + alphabet.map { [$0] }
        sequences += alphabet.flatMap { first in alphabet.map { [first, $0] } }
        sequences += inForce.flatMap { first in inForce.flatMap { second in inForce.map { [first, second, $0] } } }
        var tests = sequences.map { trustedDeviceTest($0, inForce: 2) }
        for sequence in [[], [alphabet[0]], [alphabet[5]], [alphabet[0], alphabet[6]]] {
            tests.append(trustedDeviceTest(sequence, inForce: nil))
            tests.append(trustedDeviceTest(sequence, inForce: 1))
        }
        return tests
    }

    static func trustedDeviceTest(_ marks: [TrustGateRules.Mark], inForce: UInt32?) -> OutputTest {
        let trusted = TrustGateRules.trustedDevices(marks: marks, inForce: inForce).contains(gateDevice)
        func word(_ mark: TrustGateRules.Mark) -> String {
            let who = mark.device.map { $0 == gateDevice ? "the device" : "another device" }
            let what = who.map { (mark.revokes ? "revokes " : "certifies ") + $0 } ?? "does not parse"
            return "an entry of epoch \(mark.epoch) \(what)"
        }
        let log = inForce.map { "epoch \($0) in force" } ?? "no log"
        let said = marks.isEmpty ? "no entries" : marks.map(word).joined(separator: ", then ")
        var flags = [trusted ? "Trusted" : "NotTrusted"]
        if marks.contains(where: { $0.device == nil && $0.epoch == inForce }) { flags.append("Unreadable") }
        var test = OutputTest(comment: "\(log): \(said)", flags: flags)
        (test.inForce, test.marks, test.device, test.trusted) = (
            inForce, marks.map(RemoteRulesGroup.TrustMark.init), gateDevice, trusted
        )
        return test
    }
}
