import RemoteContract
import RemoteRules
import SyncModel

/// The RequestRefusal, ApprovalTransition and QuestionTransition groups: what ``RequestRules``
/// answers.
extension RemoteRulesVectorGenerator {
    /// A new request of each kind, valid, then with one field at a time at and past each bound.
    static func refusalTests() -> [OutputTest] {
        let bytes = RequestRules.sealedBodyBytes
        var tests: [OutputTest] = []
        for kind in RequestRules.Kind.allCases {
            let window = RequestRules.expiryWindow(kind)
            let valid = (
                generation: Int64(1), expiresIn: window.lowerBound, bodyBytes: Int?(bytes.lowerBound), header: true
            )
            var cases = [(valid, "valid")]
            for generation: Int64 in [0, -1, 2, 2_147_483_647, 2_147_483_648] {
                cases.append(((generation, valid.expiresIn, valid.bodyBytes, true), "generation \(generation)"))
            }
            for expiresIn in [window.lowerBound - 1, window.upperBound, window.upperBound + 1, 0, -1] {
                cases.append(((1, expiresIn, valid.bodyBytes, true), "expires in \(expiresIn) s"))
            }
            for size in [nil, bytes.lowerBound - 1, bytes.upperBound, bytes.upperBound + 1] as [Int?] {
                cases.append(
                    (
                        (1, valid.expiresIn, size, true),
                        size.map { "a body of \($0) bytes" } ?? "a body that is not canonical base64"
                    ))
            }
            cases.append(((1, valid.expiresIn, valid.bodyBytes, false), "a body of another version or generation"))
            cases.append(((0, -1, nil, false), "every field wrong: the generation is named first"))
            cases.append(((1, -1, nil, false), "expiry and body wrong: the expiry is named first"))
            for (fields, about) in cases {
                let refused = RequestRules.refusal(
                    kind, generation: fields.generation, expiresIn: fields.expiresIn, bodyBytes: fields.bodyBytes,
                    bodyHeaderMatches: fields.header)
                var test = OutputTest(
                    comment: "\(kind.rawValue): \(about)", flags: [refused == nil ? "Accepted" : "Refused"])
                test.kind = kind.rawValue
                test.generation = fields.generation
                test.expiresIn = fields.expiresIn
                test.bodyBytes = fields.bodyBytes
                test.bodyHeaderMatches = fields.header
                test.refused = refused?.rawValue ?? "none"
                let words = refused.map { RequestRules.NewRequestRefusal(kind, $0) }
                (test.message, test.sqlState) = (words?.message, words?.sqlState)
                tests.append(test)
            }
        }
        return tests
    }

    /// Every approval status on both sides of its time, under every call: both verdicts, a
    /// cancel, a reopen naming the stored decision or another at the budget's edges, the expiry
    /// pass.
    static func approvalTests() -> [OutputTest] {
        var events: [RequestRules.ApprovalEvent] = ApprovalVerdict.allCases.map { .answer($0) } + [.cancel]
        for matches in [true, false] {
            for reopened in [0, RequestRules.reopenLimit - 1, RequestRules.reopenLimit] {
                events.append(.reopen(decisionMatches: matches, reopened: reopened))
            }
        }
        events.append(.expire)
        var tests: [OutputTest] = []
        for status in ApprovalStatus.allCases {
            for expired in [false, true] {
                for event in events {
                    let transition = RequestRules.transition(approval: status, expired: expired, on: event)
                    var test = OutputTest(
                        comment:
                            "\(describe(event)) on \(article(status.rawValue)) request\(expired ? " past its time" : "")",
                        flags: [transition.words.action.capitalized])
                    switch event {
                    case .answer(let verdict):
                        test.event = "answer"
                        test.verdict = verdict.rawValue
                    case .cancel: test.event = "cancel"
                    case .reopen(let matches, let reopened):
                        test.event = "reopen"
                        test.decisionMatches = matches
                        test.reopened = reopened
                    case .expire: test.event = "expire"
                    }
                    tests.append(transitionTest(test, from: status.rawValue, expired: expired, transition))
                }
            }
        }
        return tests
    }

    /// Every question status on both sides of its time, under every call.
    static func questionTests() -> [OutputTest] {
        // A close names any status: only answered and cancelled take.
        let events: [RequestRules.QuestionEvent] = [.answer] + QuestionStatus.allCases.map { .close($0) } + [.expire]
        var tests: [OutputTest] = []
        for status in QuestionStatus.allCases {
            for expired in [false, true] {
                for event in events {
                    let transition = RequestRules.transition(question: status, expired: expired, on: event)
                    var test = OutputTest(
                        comment:
                            "\(describe(event)) on \(article(status.rawValue)) question\(expired ? " past its time" : "")",
                        flags: [transition.words.action.capitalized])
                    switch event {
                    case .answer: test.event = "answer"
                    case .close(let closed):
                        test.event = "close"
                        test.closedAs = closed.rawValue
                    case .expire: test.event = "expire"
                    }
                    tests.append(transitionTest(test, from: status.rawValue, expired: expired, transition))
                }
            }
        }
        return tests
    }

    static func transitionTest<Status: RawRepresentable<String>>(
        _ test: OutputTest, from: String, expired: Bool, _ transition: RequestRules.Transition<Status>
    ) -> OutputTest {
        var test = test
        test.from = from
        test.expired = expired
        test.action = transition.words.action
        test.to = transition.words.status.rawValue
        (test.queues, test.reason) = transition.push.words
        return test
    }

    /// A status word after its article.
    static func article(_ word: String) -> String { ("aeiou".contains(word.first ?? "x") ? "an " : "a ") + word }

    static func describe(_ event: RequestRules.ApprovalEvent) -> String {
        switch event {
        case .answer(let verdict): "answer \(verdict.rawValue)"
        case .cancel: "cancel"
        case .reopen(let matches, let reopened):
            "reopen naming \(matches ? "the stored decision" : "another decision"), reopened \(reopened) times"
        case .expire: "expiry pass"
        }
    }

    static func describe(_ event: RequestRules.QuestionEvent) -> String {
        switch event {
        case .answer: "answer"
        case .close(let status): "close as \(status.rawValue)"
        case .expire: "expiry pass"
        }
    }
}
