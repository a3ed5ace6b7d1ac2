import DeviceTrust
import Foundation
import SecretCrypto
import Testing

/// Which witness vouches for a frozen desktop's head (trust-log.md, "A frozen view"): only a
/// counted witness of that very entry by a device the log makes a root, and none dated beyond
/// the clock allowance. Each case is the rule `TrustLogWitnesses.Evaluation.newestRootWitness`
/// would break if it counted that witness.
@Suite("A root's word on the head")
struct RootWitnessTests {
    static let now: UInt64 = 1_800_100_000

    @Test("a phone's, a revoked root's, a future, an older and a forked witness vouch for nothing; a root's does")
    func onlyRootsVouch() throws {
        var log = try LogFixture()
        let phone = try log.certify()
        let former = try log.certify(type: "linux-desktop")
        try log.grantRoot(former)
        // The root the next succession revokes: its witnesses no longer count.
        _ = try log.succeed(revoking: [former])
        let state = log.state
        #expect(state.isRoot(log.root.id) && !state.isRoot(former.id) && !state.isRoot(phone.id))
        let hashes = try TrustLogVerifier.verify(log.texts, userID: log.user, epoch: 1).hashes
        let head = state.headSeq
        func row(
            _ device: LogFixture.Device, seq: UInt64? = nil, hash: [UInt8]? = nil, seenAt: UInt64
        ) -> TrustLogWitnesses.Row {
            let seq = seq ?? head
            let witness = TrustLogWitness(
                userID: log.user, deviceID: device.id, epoch: 1, seq: seq, entryHash: hash ?? hashes[Int(seq)],
                seenAt: seenAt)
            let (body, signature) = witness.signed(by: device.ed25519)
            return TrustLogWitnesses.Row(deviceID: device.id, body: body, signature: signature)
        }
        func word(_ rows: [TrustLogWitnesses.Row]) -> UInt64? {
            TrustLogWitnesses.evaluate(
                rows, state: state, hashAt: { $0 < hashes.count ? hashes[Int($0)] : nil }, now: Self.now
            ).newestRootWitness(of: state)
        }
        let rootWord = row(log.root, seenAt: Self.now - 7_200)
        #expect(word([rootWord]) == Self.now - 7_200)
        // Newer words that are not a root's on this head change nothing.
        let allowance = TrustLogEpochs.clockAllowance
        #expect(word([rootWord, row(phone, seenAt: Self.now)]) == Self.now - 7_200, "a phone vouched")
        #expect(word([rootWord, row(former, seenAt: Self.now)]) == Self.now - 7_200, "a revoked root vouched")
        #expect(word([row(log.root, seenAt: Self.now + allowance + 1)]) == nil, "a witness from the future vouched")
        #expect(word([row(log.root, seenAt: Self.now + allowance)]) == Self.now + allowance)
        #expect(word([row(log.root, seq: head - 1, seenAt: Self.now)]) == nil, "an older entry's witness vouched")
        #expect(word([row(log.root, hash: SHA256.hash([7]), seenAt: Self.now)]) == nil, "a forked witness vouched")
    }
}
