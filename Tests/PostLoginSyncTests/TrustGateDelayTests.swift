import DeviceTrust
import RemoteRules
import Testing

/// The remote's trust gate (``TrustGateRules``, held to the SQL by the vectors) and the client's
/// trust log (`TrustLogEpochs`) name one 72-hour delay: a reset the client shows as taking effect
/// at a time is the one the remote's gate puts in force then.
@Suite("The trust gate's reset delay")
struct TrustGateDelayTests {
    @Test("the remote's gate waits the client's 72 hours, to the second, before a reset is in force")
    func delay() {
        let delay = Int64(TrustLogEpochs.resetDelay)
        #expect(TrustGateRules.resetDelay == delay)
        #expect(TrustGateRules.epochInForce(current: 1, pending: .init(epoch: 2, age: delay)) == 2)
        #expect(TrustGateRules.epochInForce(current: 1, pending: .init(epoch: 2, age: delay - 1)) == 1)
    }
}
