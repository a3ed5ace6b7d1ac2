import ConformanceVectors
import RemoteContract
import RemoteRules
import SyncModel

/// The AlertPayload and LiveActivityPayload groups: what ``PushPayloads`` writes.
extension RemoteRulesVectorGenerator {
    static let payloadSession = "6f1c2d3e-4a5b-4c6d-8e7f-901a2b3c4d5e"

    /// A text of `count` base64 characters (the rule measures `sealed`, it does not read it).
    static func base64Text(_ count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        return String((0..<count).map { alphabet[($0 * 7 + 3) % alphabet.count] })
    }

    static func request(_ kind: AlertKind, sealed: String) -> PushPayloads.Request {
        PushPayloads.Request(
            id: kind == .question ? "0b7e4f2a-9c1d-4e3f-a5b6-c7d8e9f0a1b2" : "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f",
            requesterDeviceID: "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", generation: 42, expiresAt: 1_764_547_500,
            sealed: sealed)
    }

    static func alertPayloadTest(
        _ kind: AlertKind, scheme: String = AlertRoute.defaultScheme, request: PushPayloads.Request?,
        decision: AlertDecision, timeSensitive: Bool, badge: Int, comment: String, flags: [String] = []
    ) -> OutputTest {
        let payload = PushPayloads.alert(
            kind, session: payloadSession, scheme: scheme, request: request, decision: decision,
            timeSensitive: timeSensitive, badge: badge)
        var shown = flags + [payload == nil ? "NotQueued" : "Queued"]
        if let request, payload != nil, request.sealed.count > 100 {
            shown.append(payload?.sealed == nil ? "SealedLeftOut" : "SealedKept")
        }
        var test = OutputTest(comment: comment, flags: shown)
        test.kind = kind.rawValue
        test.sessionId = payloadSession
        test.scheme = scheme
        test.request = request.map(RemoteRulesGroup.PayloadRequest.init)
        test.decision = decision.rawValue
        test.timeSensitive = timeSensitive
        test.badge = badge
        test.payload = payload?.json
        return test
    }

    /// Every kind under every decision, with time-sensitive alerts on and off and badges of one to
    /// seven digits; a request kind without its request; and the sealed body at the longest that
    /// is kept and one character longer, for both request kinds and the longest scheme.
    static func alertPayloadTests() -> [OutputTest] {
        var tests: [OutputTest] = []
        for kind in AlertKind.allCases {
            for decision in AlertDecision.allCases {
                for timeSensitive in [true, false] {
                    for badge in kind.isTaskKind ? [0] : [0, 12, 1_234_567] {
                        tests.append(
                            alertPayloadTest(
                                kind, request: kind.isTaskKind ? nil : request(kind, sealed: base64Text(64)),
                                decision: decision, timeSensitive: timeSensitive, badge: badge,
                                comment: "\(kind.rawValue) decided \(decision.rawValue), time-sensitive "
                                    + "\(on(timeSensitive)), badge \(badge)"))
                    }
                }
            }
        }
        for kind in [AlertKind.approval, .question] {
            tests.append(
                alertPayloadTest(
                    kind, request: nil, decision: .alert, timeSensitive: true, badge: 1,
                    comment: "\(kind.rawValue) without its request", flags: ["MissingRequest"]))
        }
        tests.append(
            alertPayloadTest(
                .taskFailed, request: request(.approval, sealed: "AAAA"), decision: .alert, timeSensitive: true,
                badge: 5,
                comment: "task_failed given a request and a badge: a task alert carries neither"))
        let longScheme = "a" + String(repeating: "b+.-9", count: 6) + "z"
        for kind in [AlertKind.approval, .question] {
            for scheme in [AlertRoute.defaultScheme, longScheme] {
                let kept = longestKept(kind, scheme: scheme)
                for (length, what) in [(kept, "the longest kept"), (kept + 1, "one character over")] {
                    for (decision, badge) in [(AlertDecision.alert, 1), (.passive, 1_234_567)] {
                        tests.append(
                            alertPayloadTest(
                                kind, scheme: scheme, request: request(kind, sealed: base64Text(length)),
                                decision: decision, timeSensitive: true, badge: badge,
                                comment: "\(kind.rawValue), scheme of \(scheme.count) characters, sealed of \(length) "
                                    + "characters (\(what)), \(decision.rawValue), badge \(badge)",
                                flags: ["PayloadLimit"]))
                    }
                }
            }
        }
        return tests
    }

    /// The longest `sealed` an alert keeps for this kind and scheme.
    static func longestKept(_ kind: AlertKind, scheme: String) -> Int {
        var length = PushPayloads.maximumBytes
        while PushPayloads.alert(
            kind, session: payloadSession, scheme: scheme, request: request(kind, sealed: base64Text(length)),
            decision: .alert, timeSensitive: true, badge: 0)?.sealed == nil
        {
            length -= 1
        }
        return length
    }

    /// Updates and ends with and without an operation given, details on and off, a runtime
    /// operation or none, no todo list, one without a current task and one with; statuses and
    /// start times (none, earlier, now, later: elapsed never below 0) in turn.
    static func liveActivityPayloadTests() -> [OutputTest] {
        let stamp: Int64 = 1_764_547_200
        let statuses = ["processing", "waiting_approval", "error", "idle", "completed"]
        let starts: [Int64?] = [stamp - 125, nil, stamp, stamp + 30, stamp - 86_400]
        let todos: [RuntimeStatus.TodoProgress?] = [
            nil, .init(completed: 3, total: 7), .init(completed: 0, total: 100_000, currentTask: "Write the docs"),
        ]
        var tests: [OutputTest] = []
        for event in LiveActivityEvent.allCases {
            for operation in [nil, LiveActivityRules.handoffOperation] {
                for details in [true, false] {
                    for runtimeOperation in [nil, "Running tests"] {
                        for todo in todos {
                            let index = tests.count
                            let status = statuses[index % statuses.count]
                            let started = starts[index % starts.count]
                            let payload = PushPayloads.liveActivity(
                                at: stamp, event: event, status: status, operation: operation, showDetails: details,
                                runtimeOperation: runtimeOperation, todo: todo, startedAt: started)
                            var test = OutputTest(
                                comment: "\(event.rawValue) showing \(status), operation \(operation ?? "none given"), "
                                    + "details \(on(details)), runtime operation \(runtimeOperation ?? "none"), "
                                    + "todo \(todo.map { "\($0.completed)/\($0.total) \($0.currentTask ?? "without a task")" } ?? "none"), "
                                    + "started \(started.map { "\(stamp - $0) s before" } ?? "unknown")",
                                flags: [event == .end ? "End" : "Update"])
                            test.stamp = stamp
                            test.event = event.rawValue
                            test.status = status
                            test.operation = operation
                            test.showDetails = details
                            test.runtimeOperation = runtimeOperation
                            test.todo = todo.map(RemoteRulesGroup.Todo.init)
                            test.startedAt = started
                            test.payload = payload.json
                            tests.append(test)
                        }
                    }
                }
            }
        }
        return tests
    }

    /// A clearing of every kind (the task kinds have none) with every reason a transition or
    /// `clear_approval` gives and badges of one to seven digits, and a handoff to every client
    /// type; ids as the callers pass them, and one `clear_approval` id that is not a UUID.
    static func silentPayloadTests() -> [OutputTest] {
        var tests: [OutputTest] = []
        let reasons = [
            "approved_on_other_device", "denied_on_other_device", "cancelled", "answered", "timeout",
        ]
        for kind in AlertKind.allCases {
            for (reason, badge) in zip(reasons, [0, 1, 12, 1_234_567, 3]) {
                let id = request(kind, sealed: "").id
                var test = OutputTest(
                    comment: "\(kind.rawValue) cleared (\(reason)), badge \(badge)",
                    flags: [kind.isTaskKind ? "NotQueued" : "Queued"])
                (test.push, test.kind, test.requestId, test.reason, test.badge) = (
                    "clearing", kind.rawValue, id, reason, badge
                )
                test.payload = PushPayloads.clearing(kind, request: id, reason: reason, badge: badge)?.json
                tests.append(test)
            }
        }
        var other = OutputTest(comment: "approval cleared by an id that is not a UUID", flags: ["Queued"])
        (other.push, other.kind, other.requestId, other.reason, other.badge) = (
            "clearing", "approval", "tool-call/7 \"quoted\"", "approved_on_other_device", 2
        )
        other.payload =
            PushPayloads.clearing(
                .approval, request: "tool-call/7 \"quoted\"", reason: "approved_on_other_device", badge: 2)?.json
        tests.append(other)
        for client in ClientType.allCases {
            var test = OutputTest(comment: "session handed off to \(client.rawValue)", flags: ["Queued"])
            (test.push, test.sessionId, test.handedOffTo) = ("handoff", payloadSession, client.rawValue)
            test.payload = PushPayloads.handoff(session: payloadSession, to: client.rawValue).json
            tests.append(test)
        }
        return tests
    }

    /// Every status of an approval request and of a question, asked by the device or another,
    /// with its time long past, just come, one second away and far off.
    static func badgeCountsTests() -> [OutputTest] {
        let statuses = Array(Set(ApprovalStatus.allCases.map(\.rawValue) + QuestionStatus.allCases.map(\.rawValue)))
            .sorted()
        var tests: [OutputTest] = []
        for status in statuses {
            for asked in [false, true] {
                for expiresIn: Int64 in [-86_400, -1, 0, 1, 600] {
                    let counts = NotificationRules.countsTowardBadge(
                        status: status, askedByDevice: asked, expiresIn: expiresIn)
                    var test = OutputTest(
                        comment: "\(status), asked by \(asked ? "this" : "another") device, expires in \(expiresIn) s",
                        flags: [counts ? "Counts" : "DoesNotCount"])
                    (test.status, test.askedByDevice, test.expiresIn, test.counts) = (status, asked, expiresIn, counts)
                    tests.append(test)
                }
            }
        }
        return tests
    }
}
