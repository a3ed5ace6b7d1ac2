import Testing

@testable import PushDelivery

/// Issue 68: the worker's reasons for closing a row at claim are a typed value, never parsed back
/// from their text.
@Suite("Closed reasons")
struct ClosedReasonTests {
    @Test("each reason has its stored text, its outcome and a metrics label the worker knows")
    func reasons() {
        #expect(ClosedReason.allCases.count == 6)
        for reason in ClosedReason.allCases {
            #expect(ClosedReason(rawValue: reason.rawValue) == reason)
            #expect(PushMetrics.label(reason: reason.label) == reason.label, "\(reason) has no metrics label")
            #expect(reason.outcome == (reason == .expired ? "failed" : "dropped"))
            #expect(reason == .expired || reason.rawValue == "dropped: " + reason.label)
        }
        #expect(ClosedReason(rawValue: "dropped: something else") == nil)
        #expect(PushMetrics.label(reason: "dropped: token invalid") == "other", "a label is never a stored text")
    }
}
