import Foundation
import TestStack
import Testing

/// `testvectors/remote-rules-v1.json` run against the SQL rules themselves (`private.rule_*`,
/// approvals and questions included, the trust gate's functions, `private.publish_witness` and the
/// caller gate's functions):
/// the Swift rules (`RemoteRules`, which the embedded remote runs) pass the same file in `sync-cli vectors verify` and `ConformanceVectorsTests`, so a rule
/// changed in one language only fails here or there. The project's own schema only (the deployed
/// variant has no notification settings, task alerts, approvals or questions), but for the trust
/// gate's, the witness, the append's epoch and the entries' placement groups, which also run on the
/// deployed variant.
@Suite("The remote-rules vectors against the SQL rules", .enabled(if: !StackEnvironment.skipped))
struct RemoteRulesSQLVectorTests {
    struct File: Decodable {
        struct Group: Decodable {
            let type: String
            let tests: [RuleTest]
        }
        let testGroups: [Group]
    }

    static func groups() throws -> [String: [RuleTest]] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("testvectors/remote-rules-v1.json")
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        return Dictionary(file.testGroups.map { ($0.type, $0.tests) }, uniquingKeysWith: +)
    }

    /// A SQL literal: text between single quotes (doubled inside), or NULL.
    static func literal(_ text: String?) -> String {
        text.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" } ?? "NULL"
    }

    static func number(_ value: Double?) -> String {
        value.map { "\($0)::double precision" } ?? "NULL::double precision"
    }

    static func flag(_ value: Bool?) -> String { value.map { $0 ? "true" : "false" } ?? "NULL::boolean" }

    /// A number as the SQL prints a double: no fraction when it has none.
    static func printed(_ value: Double) -> String { value == value.rounded() ? String(Int(value)) : "\(value)" }

    /// What a test expects, in the outcome's words (a delivery's reason in angle brackets: it may
    /// be empty, and the output's last line loses its trailing spaces).
    static func expected(_ type: String, _ test: RuleTest) -> String {
        let answer: String
        switch type {
        case "AlertDecision": answer = test.decision ?? "?"
        case "MayQueuePush": answer = test.mayQueue.map { $0 ? "true" : "false" } ?? "?"
        case "TaskAlertCoalescing":
            answer = (test.action ?? "?") + (test.dueAfterNewest.map { " " + printed($0) } ?? "")
        case "RequestRefusal": answer = requestRefusalAnswer(test)
        case "DeliveryOutcome":
            answer =
                [test.outcome, test.rank.map(String.init)].map { $0 ?? "?" }.joined(separator: " ")
                + (test.reason.map { " <\($0)>" } ?? "")
        case "LiveActivityDue":
            answer =
                (test.replaces.map { $0 ? "true" : "false" } ?? "?") + " " + (test.due ?? "?")
                + (test.afterPrevious.map { " " + printed($0) } ?? "")
        case "LiveActivityRefusal": answer = test.refused ?? "?"
        case "TrustEpochStatus": answer = test.epochStatus ?? "?"
        case "TrustPlacement":
            answer =
                test.answer == "allowed"
                ? "allowed" : "\(test.answer ?? "?") \(test.sqlState ?? "?") <\(test.message ?? "?")>"
        case "DeliverySpeaks": answer = test.speaks ?? "?"
        case "LiveActivityStatus": answer = test.status ?? "?"
        case "AlertPriority", "LiveActivityPriority": answer = test.priority.map(String.init) ?? "none"
        case "AlertPayload", "LiveActivityPayload", "SilentPayload": answer = "same"
        case "BadgeCounts": answer = test.counts.map { $0 ? "true" : "false" } ?? "?"
        case "PushTokenPlacement": answer = test.placement ?? "?"
        case "EpochInForce": answer = epochAnswer(test)
        case "TrustedDevice": answer = test.trusted.map { $0 ? "true" : "false" } ?? "?"
        case "WitnessAdmission": answer = witnessAnswer(test)
        case "CallerGate": answer = callerGateAnswer(test)
        case "TrustLogCall": answer = trustLogCallAnswer(test)
        case "SessionDesktop", "Asker", "QuestionAnswer", "ApprovalAnswer", "RequestControl", "QuestionClose",
            "SessionEvent":
            answer = requestCallerAnswer(test)
        case "DeviceRegistration", "NewDeviceRoom":
            answer =
                (test.answer ?? test.room.map { $0 ? "true" : "false" } ?? "?")
                + (test.message.map { " <\($0)> \(test.hint ?? "-") \(test.sqlState ?? "?")" } ?? "")
        case "PushTokenRefusal": answer = (test.refused ?? "?") + (test.message.map { " <\($0)>" } ?? "")
        case "Unreached": answer = (test.outcome ?? "?") + (test.reason.map { " <\($0)>" } ?? "")
        case "ApprovalTransition", "QuestionTransition":
            answer =
                [test.action, test.to, test.queues].map { $0 ?? "?" }.joined(separator: " ")
                + (test.reason.map { " " + $0 } ?? "")
        default: answer = test.raises ?? "?"
        }
        return "\(test.tcId) \(answer)"
    }

    /// The test's settings as a `public.notification_settings` row.
    static func row(_ settings: [String: Bool]?) throws -> String {
        let json = try JSONSerialization.data(withJSONObject: settings ?? [:], options: [.sortedKeys])
        return
            "jsonb_populate_record(NULL::public.notification_settings, \(literal(String(decoding: json, as: UTF8.self)))::jsonb)"
    }

    /// One statement for every test of the groups: each call's answer as a line, `tcId answer`.
    static func statement(_ groups: [String: [RuleTest]]) throws -> String {
        var calls: [String] = []
        for test in groups["AlertDecision"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || private.rule_alert_decision(\(literal(test.kind)), "
                    + "\(try row(test.settings)), \(number(test.idleElsewhere)))")
        }
        for test in groups["MayQueuePush"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || private.rule_may_queue_push(\(literal(test.push)), "
                    + "\(try row(test.settings)))::text")
        }
        for test in groups["RuntimeTaskKind"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || coalesce(private.rule_runtime_task_kind(\(flag(test.hadStatus)), "
                    + "\(literal(test.before))::text, \(literal(test.after))::text), 'none')")
        }
        for test in groups["StatusTaskKind"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || coalesce(private.rule_status_task_kind(\(literal(test.before))::text, "
                    + "\(literal(test.after))::text), 'none')")
        }
        for test in groups["TaskAlertCoalescing"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || r.action || coalesce(' ' || r.due_after_newest, '') "
                    + "FROM private.rule_task_alert_coalescing(\(literal(test.kind)), \(literal(test.newestKind))::text, "
                    + "\(number(test.newestAge)), \(flag(test.newestWaits))) r")
        }
        let transition = "r.action || ' ' || r.next_status || ' ' || r.push || coalesce(' ' || r.reason, '')"
        for test in groups["ApprovalTransition"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || \(transition) FROM private.rule_approval_transition("
                    + "\(literal(test.from)), \(flag(test.expired)), \(literal(test.event)), \(literal(test.verdict))::text, "
                    + "\(flag(test.decisionMatches)), \(test.reopened.map(String.init) ?? "NULL")::integer) r")
        }
        for test in groups["QuestionTransition"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || \(transition) FROM private.rule_question_transition("
                    + "\(literal(test.from)), \(flag(test.expired)), \(literal(test.event)), \(literal(test.closedAs))::text) r"
            )
        }
        for test in groups["DeliveryOutcome"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || r.outcome || ' ' || private.rule_delivery_rank(r.outcome) "
                    + "|| coalesce(' <' || r.reason || '>', '') FROM private.rule_delivery_outcome(\(flag(test.delivered)), "
                    + "\(flag(test.failed)), \(literal(test.lastError))::text, \(test.attempts.map(String.init) ?? "NULL")::integer) r"
            )
        }
        for test in groups["Unreached"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || r.outcome || coalesce(' <' || r.reason || '>', '') FROM private.rule_unreached("
                    + "\(flag(test.settingOff)), \(flag(test.registeredLater)), \(flag(test.validToken)), \(flag(test.trusted))) r"
            )
        }
        for test in groups["LiveActivityDue"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || r.replaces::text || ' ' || r.due || coalesce(' ' || r.after_previous, '') "
                    + "FROM private.rule_live_activity_due("
                    + "\(literal(test.event)) = 'end', \(number(test.waitingDueIn)), \(number(test.previousDueIn))) r")
        }
        for test in groups["LiveActivityRefusal"] ?? [] {
            // The trust log as the rule reads it: none without a log, else whether it vouches.
            let vouched: String =
                switch test.trustLog {
                case "none", "no_epoch": "NULL::boolean"
                case "certifies": "true"
                case "revokes", "silent": "false"
                default: "'a trust log word this test does not know'::boolean" // fails the call
                }
            calls.append(
                "SELECT \(test.tcId) || ' ' || coalesce(private.rule_live_activity_refusal("
                    + "\(literal(test.event)) = 'end', \(flag(test.settingOff)), \(vouched), \(flag(test.ended))), 'none')"
            )
        }
        for test in groups["TrustEpochStatus"] ?? [] {
            // The SQL's epoch_status as the file's word (an unknown number prints nothing: a failure).
            calls.append(
                "SELECT \(test.tcId) || ' ' || (ARRAY['open', 'pending_or_closed', 'not_current'])[1 + "
                    + "private.rule_trust_epoch_status(\(test.epoch.map(String.init) ?? "NULL"), "
                    + "\(test.currentEpoch.map(String.init) ?? "NULL"), \(test.pendingEpoch.map(String.init) ?? "NULL"), "
                    + "\(flag(test.hasHead)))]")
        }
        for test in groups["TrustPlacement"] ?? [] {
            let verdict: String =
                switch test.answerVerdict {
                case nil: "NULL"
                case "veto": "1"
                case "accept": "2"
                default: "'a verdict this test does not know'::integer" // fails the call
                }
            calls.append(
                "SELECT \(test.tcId) || ' ' || coalesce(r.reason || ' ' || r.sql_state || ' <' || r.message || '>', "
                    + "'allowed') FROM private.rule_trust_placement_refusal(\(literal(test.placement)), "
                    + "\(test.priorEpoch.map(String.init) ?? "NULL"), \(test.currentEpoch.map(String.init) ?? "NULL"), "
                    + "\(flag(test.withAccept)), \(verdict), \(flag(test.namesReset))) r")
        }
        for test in groups["LiveActivityStatus"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || private.live_activity_status(jsonb_build_object('coding_session', "
                    + "jsonb_strip_nulls(jsonb_build_object('status', \(literal(test.runtime))::text))))")
        }
        for test in groups["DeliverySpeaks"] ?? [] {
            func key(_ outcome: String?, _ time: Double?, _ id: Int64?) -> String {
                "private.rule_delivery_key(\(literal(outcome)), \(time.map { "\($0)" } ?? "NULL")::numeric, "
                    + "\(id.map(String.init) ?? "NULL")::bigint)"
            }
            calls.append(
                "SELECT \(test.tcId) || ' ' || CASE WHEN \(key(test.rowOutcome, test.rowUpdatedAt, test.rowId)) > "
                    + "\(key(test.otherOutcome, test.otherUpdatedAt, test.otherRowId)) THEN 'row' ELSE 'other' END")
        }
        for test in groups["AlertPriority"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || coalesce(private.rule_alert_priority(\(literal(test.decision)))::text, 'none')"
            )
        }
        for test in groups["LiveActivityPriority"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || private.rule_live_activity_priority(\(literal(test.event)) = 'end', "
                    + "\(literal(test.status))::text)")
        }
        calls += try payloadCalls(groups)
        let words = "coalesce(' <' || w.message || '> ' || coalesce(w.hint, '-') || ' ' || w.state, '')"
        for test in groups["DeviceRegistration"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || r.answer || \(words) FROM private.rule_device_registration("
                    + [
                        test.registered, test.mine, test.ended, test.sameCredential, test.deviceOfAnother,
                        test.revokedInLog,
                        test.credentialInUse,
                    ].map(flag).joined(separator: ", ")
                    + ") r LEFT JOIN LATERAL private.rule_device_refusal(r.answer) w ON true")
        }
        for test in groups["NewDeviceRoom"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || x.room::text || CASE WHEN x.room THEN '' ELSE \(words) END "
                    + "FROM (SELECT private.rule_new_device_room(\(test.registeredInLastHour.map(String.init) ?? "NULL")) AS room) x, "
                    + "private.rule_device_refusal('limit') w")
        }
        for test in groups["PushTokenRefusal"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || coalesce(r.refused, 'none') || coalesce(' <' || r.message || '>', '') "
                    + "FROM private.rule_push_token_refusal(\(literal(test.token))::text, \(literal(test.tokenType))::text, "
                    + "\(literal(test.platform))::text, \(literal(test.environment))::text, \(literal(test.activityId))::text, "
                    + "\(flag(test.hasSession)), \(literal(test.previousToken))::text) r")
        }
        for test in groups["BadgeCounts"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || private.rule_badge_counts(\(literal(test.status)), "
                    + "\(flag(test.askedByDevice)), \(test.expiresIn.map(String.init) ?? "NULL")::bigint)::text")
        }
        for test in groups["PushTokenPlacement"] ?? [] {
            calls.append(
                "SELECT \(test.tcId) || ' ' || private.rule_push_token_placement(\(literal(test.heldBy)), "
                    + "\(flag(test.holderValid)))")
        }
        return calls.joined(separator: " UNION ALL ") + ";"
    }

    /// The payload groups' calls: `same` when the SQL's payload equals the test's as JSON, else
    /// the SQL's (`none`: no payload).
    static func payloadCalls(_ groups: [String: [RuleTest]]) throws -> [String] {
        func compared(_ test: RuleTest, _ call: String) -> String {
            "SELECT \(test.tcId) || ' ' || CASE WHEN p IS NOT DISTINCT FROM \(literal(test.payload))::jsonb THEN 'same' "
                + "ELSE coalesce(p::text, 'none') END FROM (SELECT \(call) AS p) x"
        }
        func integer(_ value: Int64?) -> String { value.map(String.init) ?? "NULL" }
        var calls: [String] = []
        for test in groups["AlertPayload"] ?? [] {
            let request = test.request
            calls.append(
                compared(
                    test,
                    "private.rule_alert_payload(\(literal(test.kind)), \(literal(test.sessionId))::uuid, "
                        + "\(literal(test.scheme)), \(literal(request?.id))::uuid, \(literal(request?.requesterDeviceId))::uuid, "
                        + "\(integer(request?.generation))::bigint, \(integer(request?.expiresAt))::bigint, "
                        + "\(literal(request?.sealed))::text, \(literal(test.decision)), \(flag(test.timeSensitive)), "
                        + "\(integer(test.badge.map(Int64.init)))::integer)"))
        }
        for test in groups["LiveActivityPayload"] ?? [] {
            let todo = try test.todo.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
            calls.append(
                compared(
                    test,
                    "private.rule_live_activity_payload(\(integer(test.stamp))::bigint, \(literal(test.event)), "
                        + "\(literal(test.status)), \(literal(test.operation))::text, \(flag(test.showDetails)), "
                        + "\(literal(test.runtimeOperation))::text, \(literal(todo))::jsonb, \(integer(test.startedAt))::bigint)"
                ))
        }
        for test in groups["SilentPayload"] ?? [] {
            calls.append(
                compared(
                    test,
                    test.push == "handoff"
                        ? "private.rule_handoff_payload(\(literal(test.sessionId)), \(literal(test.handedOffTo)))"
                        : "private.rule_clearing_payload(\(literal(test.kind)), \(literal(test.requestId)), "
                            + "\(literal(test.reason)), \(integer(test.badge.map(Int64.init)))::integer)"))
        }
        return calls
    }

    /// The statement that asks the SQL a chunk of one group's tests.
    static func groupStatement(_ type: String, _ chunk: [RuleTest]) throws -> String {
        switch type {
        case "WitnessAdmission": witnessStatement(chunk)
        case "CallerGate": callerGateStatement(chunk)
        case "SessionDesktop", "Asker": requestCallerStatement(type, chunk)
        case "RequestRefusal": requestRefusalStatement(chunk)
        case "QuestionAnswer": questionAnswerStatement(chunk)
        case "ApprovalAnswer": approvalAnswerStatement(chunk)
        case "RequestControl": requestControlStatement(chunk)
        case "QuestionClose": questionCloseStatement(chunk)
        case "TrustLogCall": trustLogCallStatement(chunk)
        case "SessionEvent": sessionEventStatement(chunk)
        case "EpochInForce", "TrustedDevice": trustGateStatement(type, chunk)
        default: try statement([type: chunk])
        }
    }

    @Test("every remote-rules vector gets the answer it names from the SQL")
    func ruleVectors() async throws {
        let stack = try StackEnvironment.require()
        let groups = try Self.groups()
        // Every group, whole (a decoding slip would make this pass on nothing), every column
        // given, every answer reached.
        #expect(
            groups.mapValues(\.count)
                == [
                    "AlertDecision": 160, "MayQueuePush": 24, "RuntimeTaskKind": 56, "StatusTaskKind": 16,
                    "TaskAlertCoalescing": 93, "RequestRefusal": 36, "ApprovalTransition": 100,
                    "QuestionTransition": 48, "DeliveryOutcome": 96, "DeliverySpeaks": 250, "Unreached": 16,
                    "LiveActivityDue": 338, "LiveActivityRefusal": 40,
                    "LiveActivityStatus": 8, "AlertPriority": 4, "LiveActivityPriority": 14, "AlertPayload": 91,
                    "LiveActivityPayload": 48, "PushTokenRefusal": 58, "DeviceRegistration": 72,
                    "NewDeviceRoom": 6, "SilentPayload": 29, "BadgeCounts": 60,
                    "PushTokenPlacement": 8, "EpochInForce": 39, "TrustedDevice": 206, "WitnessAdmission": 59,
                    "CallerGate": 256, "SessionDesktop": 4, "Asker": 16, "QuestionAnswer": 160, "ApprovalAnswer": 512,
                    "RequestControl": 192, "QuestionClose": 28, "TrustLogCall": 102, "SessionEvent": 64,
                    "TrustEpochStatus": 90, "TrustPlacement": 39,
                ])
        let notification = (groups["AlertDecision"] ?? []) + (groups["MayQueuePush"] ?? [])
        #expect(notification.allSatisfy { $0.settings?.count == 10 })
        #expect(
            Set((groups["AlertDecision"] ?? []).compactMap(\.decision)) == ["off", "suppressed", "passive", "alert"])
        #expect(
            Set((groups["TaskAlertCoalescing"] ?? []).compactMap(\.action))
                == ["queue", "coalesce", "replace", "queue_after"])
        for type in ["ApprovalTransition", "QuestionTransition"] {
            #expect(Set((groups[type] ?? []).compactMap(\.action)).isSuperset(of: ["takes", "stays"]))
            #expect(Set((groups[type] ?? []).compactMap(\.queues)).isSuperset(of: ["none", "clearing"]))
        }
        #expect(
            Set((groups["RequestRefusal"] ?? []).compactMap(\.refused)) == ["none", "generation", "expires_at", "body"])
        #expect((groups["ApprovalTransition"] ?? []).contains { $0.action == "over_limit" })
        #expect((groups["ApprovalTransition"] ?? []).contains { $0.queues == "alerts" })
        #expect(
            Set((groups["DeliveryOutcome"] ?? []).compactMap(\.outcome))
                == ["delivered", "sent", "queued", "failed", "dropped"])
        #expect(
            Set((groups["Unreached"] ?? []).compactMap(\.reason))
                == ["setting off", "registered later", "token invalid", "not trusted", "not queued"])
        #expect(Set((groups["LiveActivityDue"] ?? []).compactMap(\.due)) == ["now", "waiting", "after_previous"])
        #expect(
            Set((groups["LiveActivityRefusal"] ?? []).compactMap(\.refused))
                == ["none", "setting_off", "not_vouched", "ended"])
        #expect(Set((groups["DeliverySpeaks"] ?? []).compactMap(\.speaks)) == ["row", "other"])
        #expect(
            Set((groups["TrustEpochStatus"] ?? []).compactMap(\.epochStatus))
                == ["open", "pending_or_closed", "not_current"])
        #expect(
            Set((groups["LiveActivityStatus"] ?? []).compactMap(\.status))
                == ["processing", "waiting_approval", "error", "idle"])
        // Every answer is the rule's: no test may pass by being expected to fail.
        #expect(groups.values.joined().allSatisfy { $0.result == "valid" })
        #expect(Set((groups["AlertPayload"] ?? []).map { $0.payload == nil }) == [true, false])
        #expect(
            (groups["AlertPayload"] ?? []).contains { $0.payload?.contains("\"sealed\"") == false && $0.request != nil }
        )
        #expect(Set((groups["SilentPayload"] ?? []).map { $0.payload == nil }) == [true, false])
        #expect(Set((groups["BadgeCounts"] ?? []).compactMap(\.counts)) == [true, false])
        #expect(Set((groups["PushTokenPlacement"] ?? []).compactMap(\.placement)) == ["register", "stays"])
        #expect(
            Set((groups["EpochInForce"] ?? []).map { $0.inForce.map(String.init) ?? "none" }) == [
                "none", "1", "2", "3", "4",
            ])
        #expect(Set((groups["TrustedDevice"] ?? []).compactMap(\.trusted)) == [true, false])
        #expect(
            Set((groups["WitnessAdmission"] ?? []).compactMap(\.admission))
                == ["malformed", "foreign", "out_of_range", "held", "stored"])
        // A statement per group, of at most 400 tests, 40 caller-gate or answer tests or 16 alert payloads: all together would pass
        // the 128 KiB a psql argument may hold (an alert payload at the limit is some 4 KiB).
        var output = ""
        let gate = ["EpochInForce", "TrustedDevice", "WitnessAdmission", "SessionDesktop", "Asker"]
        let rows = [
            "CallerGate", "QuestionAnswer", "ApprovalAnswer", "RequestControl", "QuestionClose", "TrustLogCall",
            "SessionEvent",
        ]
        for (type, tests) in groups {
            let size =
                type == "AlertPayload"
                ? 16 : rows.contains(type) ? Self.callerChunk : (gate.contains(type) ? 100 : 400)
            for start in stride(from: 0, to: tests.count, by: size) {
                let chunk = Array(tests[start..<min(start + size, tests.count)])
                output += try await stack.sql(Self.groupStatement(type, chunk)) + "\n"
            }
        }
        let lines = Dictionary(
            output.split(separator: "\n").map { line in (Int(line.split(separator: " ")[0]) ?? -1, String(line)) },
            uniquingKeysWith: { first, _ in first })
        for (type, tests) in groups {
            for test in tests {
                #expect(lines[test.tcId] == Self.expected(type, test), "\(type) tcId \(test.tcId) (\(test.comment))")
            }
        }
    }
}
