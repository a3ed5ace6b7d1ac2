import ConformanceVectors
import RemoteContract
import RemoteRules
import SyncModel

extension RemoteRulesVectorGenerator {
    /// `last_error` values: none, a dropped row's (with a reason, an empty one, one beginning
    /// with a combining mark that a reading by characters would join to the prefix's space),
    /// near misses of the prefix, and a failed row's.
    static let lastErrors: [(String?, String)] = [
        (nil, "no last error"), ("dropped: token moved", "dropped with a reason"),
        ("dropped: ", "dropped with an empty reason"),
        ("dropped: \u{301}token moved", "dropped, its reason beginning with a combining mark"),
        ("dropped:token moved", "the prefix without its space"), ("DROPPED: token moved", "the prefix in capitals"),
        (" dropped: token moved", "the prefix after a space"), ("expired", "a failed row's reason"),
    ]

    static func deliveryTests() -> [OutputTest] {
        var tests: [OutputTest] = []
        for delivered in [false, true] {
            for failed in [false, true] {
                for (lastError, described) in lastErrors {
                    for attempts in [0, 1, 3] {
                        let answer = DeliveryRules.outcome(
                            delivered: delivered, failed: failed, lastError: lastError, attempts: attempts)
                        var test = OutputTest(
                            comment: "delivered \(delivered), failed \(failed), \(described), attempts \(attempts)",
                            flags: [answer.outcome.rawValue.capitalized])
                        test.delivered = delivered
                        test.failed = failed
                        test.lastError = lastError
                        test.attempts = attempts
                        test.outcome = answer.outcome.rawValue
                        test.reason = answer.reason
                        test.rank = DeliveryRules.rank(answer.outcome)
                        tests.append(test)
                    }
                }
            }
        }
        return tests
    }

    static func unreachedTests() -> [OutputTest] {
        var tests: [OutputTest] = []
        for off in [false, true] {
            for later in [false, true] {
                for valid in [false, true] {
                    for trusted in [false, true] {
                        let answer = DeliveryRules.unreached(
                            settingOff: off, registeredLater: later, validToken: valid, trusted: trusted)
                        var test = OutputTest(
                            comment:
                                "setting off \(off), registered later \(later), valid token \(valid), trusted \(trusted)",
                            flags: [answer.outcome == .off ? "Off" : "Unreachable"])
                        test.settingOff = off
                        test.registeredLater = later
                        test.validToken = valid
                        test.trusted = trusted
                        test.outcome = answer.outcome.rawValue
                        test.reason = answer.reason
                        tests.append(test)
                    }
                }
            }
        }
        return tests
    }

    /// Seconds from now until a row is due: none, long past, on either side of the update
    /// interval's edge and at it, inside it (a shorter interval must fail a test), on either side
    /// of now and at it, later.
    static let dueTimes: [Double?] = [
        nil, -30, -15.5, -15.000001, -15, -14.999999, -14.5, -12, -0.5, 0, 0.000001, 0.5, 10,
    ]

    static func liveActivityTests() -> [OutputTest] {
        var tests: [OutputTest] = []
        for event in LiveActivityEvent.allCases {
            for waiting in dueTimes {
                for previous in dueTimes {
                    let answer = LiveActivityQueueing.placement(
                        end: event == .end, waitingDueIn: waiting, previousDueIn: previous)
                    func described(_ value: Double?) -> String { value.map { "due in \($0) s" } ?? "none" }
                    var test = OutputTest(
                        comment:
                            "\(event.rawValue), waiting row \(described(waiting)), latest row \(described(previous))",
                        flags: [answer.replaces ? "Replaces" : "Inserts"])
                    test.event = event.rawValue
                    test.waitingDueIn = waiting
                    test.previousDueIn = previous
                    test.replaces = answer.replaces
                    test.due = answer.due.rawValue
                    test.afterPrevious = answer.afterPrevious
                    tests.append(test)
                }
            }
        }
        return tests
    }

    /// Each event, with the setting on and off, under each trust log, before and after an end.
    static func liveActivityRefusalTests() -> [OutputTest] {
        LiveActivityEvent.allCases.flatMap { event in
            [false, true].flatMap { settingOff in
                RemoteRulesGroup.CallerTrustLog.allCases.flatMap { log in
                    [false, true].map { ended in
                        let refusal = LiveActivityQueueing.refusal(
                            end: event == .end, settingOff: settingOff, vouched: log.certified, ended: ended)
                        var test = OutputTest(
                            comment:
                                "\(event.rawValue), live activities \(settingOff ? "off" : "on"), trust log "
                                + "\(log.rawValue), \(ended ? "an end queued already" : "no end queued")",
                            flags: [refusal == nil ? "Queued" : "NotQueued"])
                        (test.event, test.settingOff, test.trustLog, test.ended) = (
                            event.rawValue, settingOff, log.rawValue, ended
                        )
                        test.refused = refusal?.rawValue ?? "none"
                        return test
                    }
                }
            }
        }
    }

    static func liveActivityStatusTests() -> [OutputTest] {
        (runtimeWords + ["Running"]).map { word in
            let status = LiveActivityRules.status(word.flatMap(RuntimeStatus.State.init(rawValue:)))
            var test = OutputTest(comment: "runtime status \(word ?? "without a word")", flags: [status])
            test.runtime = word
            test.status = status
            return test
        }
    }

    static func alertPriorityTests() -> [OutputTest] {
        AlertDecision.allCases.map { decision in
            let priority = NotificationRules.priority(decision)
            var test = OutputTest(
                comment: "an alert decided \(decision.rawValue)", flags: [priority == nil ? "NotQueued" : "Queued"])
            test.decision = decision.rawValue
            test.priority = priority
            return test
        }
    }

    static func liveActivityPriorityTests() -> [OutputTest] {
        var tests: [OutputTest] = []
        for event in LiveActivityEvent.allCases {
            for status in [nil, "processing", "waiting_approval", "error", "idle", "completed", "Waiting_approval"] {
                let priority = LiveActivityQueueing.priority(end: event == .end, status: status)
                var test = OutputTest(
                    comment: "\(event.rawValue) showing \(status ?? "no status")", flags: ["Priority\(priority)"])
                test.event = event.rawValue
                test.status = status
                test.priority = priority
                tests.append(test)
            }
        }
        return tests
    }

    /// One row against another of each outcome, changed a second or a microsecond earlier, at the
    /// same time, a microsecond or a second later (a side that cut times to whole seconds must
    /// fail a test), older and newer.
    static func speaksTests() -> [OutputTest] {
        let outcomes: [DeliveryOutcome] = [.delivered, .sent, .queued, .failed, .dropped]
        let base = 1_764_547_200.25
        var tests: [OutputTest] = []
        for mine in outcomes {
            for theirs in outcomes {
                for (otherTime, when) in [
                    (base - 1, "a second earlier"), (base - 0.000001, "a microsecond earlier"),
                    (base, "at the same time"), (base + 0.000001, "a microsecond later"), (base + 1, "a second later"),
                ] {
                    for (otherID, age) in [(Int64(7), "older"), (Int64(9), "newer")] {
                        let row = DeliveryRules.Candidate(outcome: mine, updatedAt: base, id: 8)
                        let other = DeliveryRules.Candidate(outcome: theirs, updatedAt: otherTime, id: otherID)
                        let speaks = DeliveryRules.speaks(row, over: other) ? "row" : "other"
                        var test = OutputTest(
                            comment: "\(mine.rawValue) against \(theirs.rawValue) changed \(when), \(age)",
                            flags: [speaks == "row" ? "RowSpeaks" : "OtherSpeaks"])
                        test.rowOutcome = mine.rawValue
                        test.rowUpdatedAt = base
                        test.rowId = 8
                        test.otherOutcome = theirs.rawValue
                        test.otherUpdatedAt = otherTime
                        test.otherRowId = otherID
                        test.speaks = speaks
                        tests.append(test)
                    }
                }
            }
        }
        return tests
    }
}
