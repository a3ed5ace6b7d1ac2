import ConformanceVectors
import Foundation
import RemoteContract
import RemoteRules
import SyncModel

/// Produces `testvectors/remote-rules-v1.json` (docs/testvectors.md): every alert kind with its
/// setting on and off, quiet-while-active on and off, and another device's last activity on
/// either side of the 60-second window; every push kind under each pair of its settings; every
/// pair of runtime and session status words; every task kind against a newest alert of each kind
/// on either side of the coalescing window, waiting or not; every call on an approval request or
/// a question in every status, on either side of its time; every state of an outbox row and of a
/// device without one; every live-activity event against a waiting row and a latest row on either
/// side of now and of the update interval; every alert and live-activity payload's members, and the
/// sealed body on either side of the payload limit; every silent push's members; every request
/// status against the badge's tests; every current epoch against a pending reset either side of its
/// 72 hours, and every short sequence of certifying, revoking and unreadable entries; witnesses of
/// every flawed shape, of others, out of range and beside those held. The answers are
/// ``NotificationRules``', ``TaskAlertRules``', ``RequestRules``', ``DeliveryRules``',
/// ``LiveActivityQueueing``'s, ``PushPayloads``', ``TrustGateRules``' and ``WitnessRules``'; the SQL
/// must give the same.
public enum RemoteRulesVectorGenerator {
    struct OutputTest: Encodable {
        var tcId = 0
        var comment: String
        var flags: [String]
        var settings: RemoteRulesGroup.Settings?
        var kind: String?
        var idleElsewhere: Double?
        var decision: String?
        var push: String?
        var mayQueue: Bool?
        var hadStatus: Bool?
        var before: String?
        var after: String?
        var raises: String?
        var newestKind: String?
        var newestAge: Double?
        var newestWaits: Bool?
        var action: String?
        var dueAfterNewest: Double?
        var from: String?
        var expired: Bool?
        var event: String?
        var verdict: String?
        var closedAs: String?
        var decisionMatches: Bool?
        var reopened: Int?
        var to: String?
        var queues: String?
        var reason: String?
        var generation: Int64?
        var expiresIn: Int64?
        var bodyBytes: Int?
        var bodyHeaderMatches: Bool?
        var refused: String?
        var delivered: Bool?
        var failed: Bool?
        var lastError: String?
        var attempts: Int?
        var outcome: String?
        var rank: Int?
        var settingOff: Bool?
        var registeredLater: Bool?
        var validToken: Bool?
        var trusted: Bool?
        var waitingDueIn: Double?
        var previousDueIn: Double?
        var replaces: Bool?
        var due: String?
        var runtime: String?
        var status: String?
        var priority: Int?
        var afterPrevious: Double?
        var rowOutcome: String?
        var rowUpdatedAt: Double?
        var rowId: Int64?
        var otherOutcome: String?
        var otherUpdatedAt: Double?
        var otherRowId: Int64?
        var speaks: String?
        var sessionId: String?
        var scheme: String?
        var request: RemoteRulesGroup.PayloadRequest?
        var timeSensitive: Bool?
        var badge: Int?
        var stamp: Int64?
        var operation: String?
        var showDetails: Bool?
        var runtimeOperation: String?
        var todo: RemoteRulesGroup.Todo?
        var startedAt: Int64?
        var payload: String?
        var token: String?
        var tokenType: String?
        var platform: String?
        var environment: String?
        var activityId: String?
        var hasSession: Bool?
        var previousToken: String?
        var message: String?
        var registered: Bool?
        var mine: Bool?
        var ended: Bool?
        var sameCredential: Bool?
        var deviceOfAnother: Bool?
        var revokedInLog: Bool?
        var credentialInUse: Bool?
        var answer: String?
        var hint: String?
        var sqlState: String?
        var registeredInLastHour: Int?
        var room: Bool?
        var requestId: String?
        var handedOffTo: String?
        var askedByDevice: Bool?
        var counts: Bool?
        var heldBy: String?
        var holderValid: Bool?
        var placement: String?
        var currentEpoch: UInt32?
        var pendingEpoch: UInt32?
        var pendingAge: Int64?
        var inForce: UInt32?
        var marks: [RemoteRulesGroup.TrustMark]?
        var device: String?
        var caller: String?
        var body: String?
        var signature: String?
        var now: Int64?
        var headSeq: UInt64?
        var held: [RemoteRulesGroup.HeldWitness]?
        var admission: String?
        var kept: [String]?
        var signedIn: Bool?
        var credential: String?
        var named: String?
        var trustLog: String?
        var itself: String?
        var calling: Bool?
        var runBy: String?
        var approvalBy: String?
        var questionBy: String?
        var signatureBytes: Int?
        var namesDevice: Bool?
        var controlHash: Bool?
        var control: String?
        var controlBytes: Int?
        var digestMatches: Bool?
        var call: String?
        var freshSignIn: Bool?
        var highestEpoch: UInt32?
        var pending: Bool?
        var legacyIdentity: Bool?
        var lastResetAge: Int64?
        var entryCount: Int?
        var backupCount: Int?
        var epoch: UInt32?
        var firstSeq: UInt64?
        var hasHead: Bool?
        var epochStatus: String?
        var priorEpoch: UInt32?
        var withAccept: Bool?
        var answerVerdict: String?
        var namesReset: Bool?
        var result = "valid"

        init(comment: String, flags: [String], settings: NotificationSettings? = nil) {
            self.comment = comment
            self.flags = flags
            self.settings = settings.map(RemoteRulesGroup.Settings.init)
        }
    }

    /// Seconds since another device was active: none, a clock ahead, inside the window, at its
    /// edge, just past it, long past.
    static let idleTimes: [Double?] = [nil, -5, 0, 30, 59.5, 60, 60.5, 3600]

    /// The JSON text of the vector file, ending in a newline.
    public static func generate() throws -> Data {
        var decisions: [OutputTest] = []
        for kind in AlertKind.allCases {
            for enabled in [true, false] {
                for quiet in [true, false] {
                    for idle in idleTimes {
                        decisions.append(alertTest(kind, enabled: enabled, quiet: quiet, idle: idle))
                    }
                }
            }
        }
        var pushes: [OutputTest] = []
        for push in QueuedPushKind.allCases {
            for background in [true, false] {
                for live in [true, false] {
                    var settings = NotificationSettings.defaults
                    settings.backgroundNotifications = background
                    settings.liveActivities = live
                    let may = NotificationRules.mayQueue(push, settings: settings)
                    var test = OutputTest(
                        comment: "\(push.rawValue), background \(on(background)), live activities \(on(live))",
                        flags: [may ? "Queued" : "NotQueued"], settings: settings)
                    test.push = push.rawValue
                    test.mayQueue = may
                    pushes.append(test)
                }
            }
        }
        let groups = [
            ("AlertDecision", decisions), ("MayQueuePush", pushes), ("RuntimeTaskKind", runtimeTests()),
            ("StatusTaskKind", statusTests()), ("TaskAlertCoalescing", coalescingTests()),
            ("RequestRefusal", refusalTests()), ("ApprovalTransition", approvalTests()),
            ("QuestionTransition", questionTests()), ("DeliveryOutcome", deliveryTests()),
            ("DeliverySpeaks", speaksTests()),
            ("Unreached", unreachedTests()), ("LiveActivityDue", liveActivityTests()),
            ("LiveActivityRefusal", liveActivityRefusalTests()),
            ("LiveActivityStatus", liveActivityStatusTests()), ("AlertPriority", alertPriorityTests()),
            ("LiveActivityPriority", liveActivityPriorityTests()), ("AlertPayload", alertPayloadTests()),
            ("LiveActivityPayload", liveActivityPayloadTests()), ("PushTokenRefusal", pushTokenTests()),
            ("DeviceRegistration", deviceRegistrationTests()), ("NewDeviceRoom", newDeviceRoomTests()),
            ("SilentPayload", silentPayloadTests()), ("BadgeCounts", badgeCountsTests()),
            ("PushTokenPlacement", pushTokenPlacementTests()), ("EpochInForce", epochInForceTests()),
            ("TrustedDevice", trustedDeviceTests()), ("WitnessAdmission", witnessAdmissionTests()),
            ("CallerGate", callerGateTests()), ("SessionDesktop", sessionDesktopTests()), ("Asker", askerTests()),
            ("QuestionAnswer", questionAnswerTests()), ("ApprovalAnswer", approvalAnswerTests()),
            ("RequestControl", requestControlTests()), ("QuestionClose", questionCloseTests()),
            ("TrustLogCall", trustLogCallTests()), ("SessionEvent", sessionEventTests()),
            ("TrustEpochStatus", trustEpochStatusTests()), ("TrustPlacement", trustPlacementTests()),
        ]
        var next = 1
        let numbered = groups.map { type, tests in
            (
                type,
                tests.map { test in
                    var test = test
                    test.tcId = next
                    next += 1
                    return test
                }
            )
        }
        return try GeneratedVectorFile.encode(
            algorithm: .remoteRulesV1,
            header: [
                "The server's notification, task-alert, approval, question, delivery, live-activity, trust-gate, witness, caller and answer rules as functions",
                "of their arguments (docs/testvectors.md): the SQL functions private.rule_* (and private.live_activity_status, the",
                "trust gate's functions) and the RemoteRules module (NotificationRules, TaskAlertRules, RequestRules, DeliveryRules,",
                "LiveActivityQueueing, TrustGateRules, WitnessRules, CallerRules, AnswerRules, with RemoteContract's LiveActivityRules) give these answers; each group names",
                "its two.",
                "Generated by `sync-vectors generate --kind remoterules`. settings: a notification_settings row by column.",
                "AlertDecision (private.rule_alert_decision, NotificationRules): kind (the alert's type), idleElsewhere (seconds since",
                "  another device was active on the session; absent: none was) -> decision (off, suppressed, passive, alert).",
                "MayQueuePush (private.rule_may_queue_push, NotificationRules): push (a queued push's kind) -> mayQueue.",
                "RuntimeTaskKind (private.rule_runtime_task_kind, TaskAlertRules): hadStatus, before, after (coding_session.status",
                "  words; absent: none) -> raises (a kind, or none). StatusTaskKind (private.rule_status_task_kind, TaskAlertRules):",
                "  before, after (session status) -> raises. TaskAlertCoalescing (private.rule_task_alert_coalescing, TaskAlertRules):",
                "  kind, and the token's newest alert for the session (newestKind, newestAge: seconds since it was due, newestWaits;",
                "  all absent: none) -> action",
                "  (queue, coalesce, replace, queue_after) and, for queue_after, dueAfterNewest (seconds after the newest's due time).",
                "RequestRefusal (private.rule_request_refusal and private.require_new_request, RequestRules): kind (approval, question), generation, expiresIn (seconds",
                "  from now), bodyBytes (the sealed body's length; absent: not canonical base64), bodyHeaderMatches -> refused",
                "  (generation, expires_at, body, or none) with a refusal's message and sqlState.",
                "ApprovalTransition (private.rule_approval_transition, RequestRules): from (the row's status), expired (its time has",
                "  come), event (answer with verdict, cancel, reopen with decisionMatches and reopened, expire) -> action (takes, stays,",
                "  over_limit), to (the new status, or the status as read), queues (none, alerts, clearing) and reason (clearing's).",
                "QuestionTransition (private.rule_question_transition, RequestRules): from, expired, event (answer, close with closedAs,",
                "  expire) -> the same.",
                "DeliveryOutcome (private.rule_delivery_outcome, rule_delivery_rank; DeliveryRules): an outbox row's delivered,",
                "  failed (it has delivered_at, failed_at), lastError (absent: NULL), attempts -> outcome (delivered, sent, queued,",
                "  failed, dropped), reason (absent: none) and rank.",
                "DeliverySpeaks (private.rule_delivery_key, DeliveryRules): two rows of one device, rowOutcome, rowUpdatedAt (epoch",
                "  seconds), rowId and otherOutcome, otherUpdatedAt, otherRowId -> speaks (row, other).",
                "Unreached (private.rule_unreached, DeliveryRules): settingOff, registeredLater, validToken, trusted (what holds of a",
                "  device without a row) -> outcome (off, unreachable) and reason.",
                "LiveActivityDue (private.rule_live_activity_due, LiveActivityQueueing): event (update, end), waitingDueIn and",
                "  previousDueIn (seconds from now until the token's waiting row, its latest row, is due; absent: none) -> replaces,",
                "  due (now, waiting, after_previous) and, for after_previous, afterPrevious (seconds after the latest row).",
                "LiveActivityRefusal (private.rule_live_activity_refusal, LiveActivityQueueing): event (update, end), settingOff",
                "  (the device turned live activities off), trustLog (as CallerGate's: none and no_epoch, no log; certifies; revokes",
                "  and silent, the log does not vouch for the device), ended (an end is queued for the token already) -> refused",
                "  (setting_off, not_vouched, ended; none: the event is queued).",
                "LiveActivityStatus (private.live_activity_status, LiveActivityRules): runtime (coding_session.status; absent: none)",
                "  -> status (a live activity's: processing, waiting_approval, error, idle).",
                "AlertPriority (private.rule_alert_priority, NotificationRules): decision -> priority (absent: nothing is queued).",
                "LiveActivityPriority (private.rule_live_activity_priority, LiveActivityQueueing): event, status (absent: none) -> priority.",
                "AlertPayload (private.rule_alert_payload, PushPayloads): kind, sessionId, scheme (the deep links'), request (an approval's",
                "  or question's id, requesterDeviceId, generation, expiresAt, sealed; absent for task kinds), decision, timeSensitive",
                "  (enable_time_sensitive), badge -> payload: the alert's compact JSON with sorted keys (absent: nothing is queued); the",
                "  SQL's jsonb equals it as JSON. sealed is any text of base64 characters: the rule only measures it.",
                "LiveActivityPayload (private.rule_live_activity_payload, PushPayloads): stamp (now, Unix seconds), event, status,",
                "  operation (absent: none given), showDetails (show_notification_details), runtimeOperation and todo (the session's",
                "  coding_session.current_operation and todo_progress; absent: none), startedAt (Unix seconds; absent: none) -> payload.",
                "PushTokenRefusal (private.rule_push_token_refusal, PushTokenRules): token, tokenType, platform, environment,",
                "  activityId, previousToken (each absent: not given), hasSession -> refused (the field, or none) and message.",
                "DeviceRegistration (private.rule_device_registration, rule_device_refusal; CredentialRules): registered (a credential",
                "  row holds the device's id; mine, ended, sameCredential describe it), deviceOfAnother, revokedInLog, credentialInUse",
                "  -> answer (known, register, or the refusal) and a refusal's message, hint (absent: none) and sqlState.",
                "NewDeviceRoom (private.rule_new_device_room, rule_device_refusal; CredentialRules): registeredInLastHour -> room, and",
                "  without room the limit's message, hint and sqlState.",
                "SilentPayload (private.rule_clearing_payload, rule_handoff_payload; PushPayloads): push (clearing: kind, requestId,",
                "  reason, badge; handoff: sessionId, handedOffTo) -> payload (absent: none for that kind).",
                "BadgeCounts (private.rule_badge_counts, NotificationRules): status, askedByDevice, expiresIn (its expiry less now,",
                "  whole seconds) -> counts (toward the device's badge).",
                "PushTokenPlacement (private.rule_push_token_placement, PushTokenRules): heldBy (none, this_device, another_device,",
                "  another_user), holderValid (the holding row is valid) -> placement (register, stays).",
                "EpochInForce (private.trust_epoch, TrustGateRules): currentEpoch, pendingEpoch (each absent: none), pendingAge",
                "  (seconds since the pending reset was written; absent without one) -> inForce (absent: none).",
                "TrustedDevice (private.tl_mark_device, private.is_trusted_device; TrustGateRules): inForce (absent: no log), marks",
                "  (what each stored entry says, in order: epoch, device (absent: the entry does not parse), revokes), device -> trusted.",
                "WitnessAdmission (private.publish_witness; TrustLogWitness.parse, WitnessRules): caller (the user) and device (the",
                "  device it proved), body and signature (the call's), now (the server's clock), currentEpoch and headSeq (each absent:",
                "  none), held (the device's witnesses: epoch, absent for the current, seq, signature, age in seconds) -> admission (malformed, foreign,",
                "  out_of_range, held, stored) and kept (the device's signatures after the call, in byte order).",
                "CallerGate (private.credential_device, calling_device, acting_device; CallerRules): signedIn, credential (what the",
                "  request carries: none, unregistered, registered, malformed, ended, another_user), device (the credential's), named",
                "  (the id the call names; absent: none), trusted (the call needs a certified device), trustLog (none, no_epoch,",
                "  certifies, revokes, silent: what the log in force says of the device) -> answer (acts, or the refusal) with a",
                "  refusal's message, hint (absent: none) and sqlState; itself (the answer to the same call naming the credential's",
                "  device: private.caller_device); calling (the credential's device is the calling device).",
                "SessionDesktop (private.require_session_desktop; CallerRules): runBy (the session row of the call's id: none, device:",
                "  the caller's, run by the calling device, other_device: the caller's, run by another device, another_user: another",
                "  user's, run by the calling device) -> answer (allowed, or the refusal) with a refusal's message and sqlState.",
                "Asker (private.require_asker; CallerRules): approvalBy and questionBy (the approval request and the question of the",
                "  call's id, as runBy names a session, by their requesting device) -> the same.",
                "QuestionAnswer (private.answer_question; AnswerRules): questionBy (the question of the call's id, as for Asker),",
                "  mine (the answering device, the calling one, is the caller's), trusted (the trust log certifies it), bodyBytes (the",
                "  sealed answer's length; absent: not canonical base64), bodyHeaderMatches (its version is 1 and its generation the",
                "  question's) -> answer (allowed: the question's transition decides, or the refusal) with a refusal's message and",
                "  sqlState.",
                "ApprovalAnswer (private.answer_approval with the trigger private.approval_answer_device_trusted; AnswerRules):",
                "  approvalBy (the approval request of the call's id, as for Asker), from (its status, not past its time), mine and",
                "  trusted (of the answering device, as for QuestionAnswer), verdict (the call's word), bodyBytes and signatureBytes",
                "  (the decision's and its signature's lengths; absent: not canonical base64), namesDevice (the decision's device_id",
                "  is the answering device's) -> answer (allowed: the request's transition decides, or the refusal) with a refusal's",
                "  message and sqlState. The device's trust and the decision's device count only when the transition takes the answer.",
                "RequestControl (private.cancel_approval and private.reopen_approval; RequestRules): event (cancel: of a pending",
                "  request; reopen: of an approved one, naming its decision), approvalBy (the approval request of the call's id, as for",
                "  Asker), controlHash (the request keeps one), control (right: its preimage, wrong: 32 other bytes, short: 31 bytes",
                "  whose digest is the one kept, noncanonical: the right bytes in base64 with a line break, malformed: not base64,",
                "  none), controlBytes (its length; absent: none, or not canonical base64), digestMatches (its SHA-256 is the one",
                "  kept), reopened (how often it was reopened) -> answer (allowed: the request's transition decides, or the refusal)",
                "  with a refusal's message and sqlState.",
                "QuestionClose (private.close_question; RequestRules): closedAs (the status the close asks for; absent: none),",
                "  questionBy (the question of the call's id, as for Asker) -> answer (allowed: the question's transition decides,",
                "  or status: not answered or cancelled, then not_your_question) with a refusal's message and sqlState.",
                "TrustLogCall (private.start_trust_log, private.append_trust_entries, private.request_identity_reset;",
                "  TrustLogCallRules): call (start, append, reset, reset_accept: a reset with an accept), freshSignIn, the user's",
                "  log state as the call's lock leaves it (currentEpoch and headSeq, each absent: none; highestEpoch; pending: a",
                "  reset waits; legacyIdentity; lastResetAge: seconds since a reset was asked for, absent: never), entryCount,",
                "  backupCount (absent: none given), an append's epoch and firstSeq -> answer (allowed: the call reads its entries,",
                "  or the refusal) with a refusal's message and sqlState.",
                "SessionEvent (private.notify_session_event; TaskAlertRules): mine (the reporting device is the caller's), runBy",
                "  (the session of the call's id, as for SessionDesktop), kind (absent: none) -> answer (allowed: its task alerts are",
                "  queued, or the refusal) with a refusal's message and sqlState.",
                "TrustEpochStatus (private.rule_trust_epoch_status, asked by private.tl_append; TrustLogServerRules): epoch (the",
                "  one an append names), currentEpoch and pendingEpoch (each absent: none), hasHead (the named epoch has rows) ->",
                "  epochStatus (open: the one to write; pending_or_closed: refused 55000; not_current: refused 22023).",
                "TrustPlacement (private.rule_trust_placement_refusal, asked by private.start_trust_log,",
                "  private.request_identity_reset and private.tl_append; TrustLogCallRules): placement (start: epoch 1's genesis;",
                "  reset: a reset's genesis; accept: the accept that comes with it; append: an entry after a genesis), priorEpoch",
                "  (a genesis's), currentEpoch (absent: none), withAccept, answerVerdict (veto, accept; absent: not a reset",
                "  answer), namesReset (the answer names the reset it answers: this one, or the pending one) -> answer (allowed, or",
                "  the refusal) with a refusal's message and sqlState.",
            ],
            groups: numbered)
    }

    static func alertTest(_ kind: AlertKind, enabled: Bool, quiet: Bool, idle: Double?) -> OutputTest {
        // The other kinds' settings are the opposite of this one's: only its own may matter.
        var settings = NotificationSettings.defaults
        for other in AlertKind.allCases { set(other, in: &settings, other == kind ? enabled : !enabled) }
        settings.quietWhileActive = quiet
        let decision = NotificationRules.alertDecision(kind: kind, settings: settings, idleElsewhere: idle)
        let elsewhere = idle.map { "another device active \(seconds($0)) ago" } ?? "no other device active"
        var flags = [decision.rawValue.capitalized]
        if let idle, idle == NotificationRules.activeWindowSeconds || idle == 60.5 { flags.append("WindowEdge") }
        if let idle, idle < 0 { flags.append("ClockAhead") }
        var test = OutputTest(
            comment: "\(kind.rawValue), its setting \(on(enabled)), quiet while active \(on(quiet)), \(elsewhere)",
            flags: flags, settings: settings)
        test.kind = kind.rawValue
        test.idleElsewhere = idle
        test.decision = decision.rawValue
        return test
    }

    /// Runtime status words: none, each state, and one no state has.
    static let runtimeWords: [String?] = [nil] + RuntimeStatus.State.allCases.map(\.rawValue) + ["bogus"]

    static func runtimeTests() -> [OutputTest] {
        var tests: [OutputTest] = []
        for hadStatus in [true, false] {
            for before in hadStatus ? runtimeWords : [nil] {
                for after in runtimeWords {
                    let raised = TaskAlertRules.runtimeKind(hadStatus: hadStatus, before: before, after: after)
                    let from = hadStatus ? "from \(before ?? "a status without a word")" : "a first status"
                    var test = OutputTest(
                        comment: "\(from) to \(after ?? "a status without a word")",
                        flags: [raised == nil ? "Nothing" : "Raises"])
                    test.hadStatus = hadStatus
                    test.before = before
                    test.after = after
                    test.raises = RemoteRulesGroup.word(raised)
                    tests.append(test)
                }
            }
        }
        return tests
    }

    static func statusTests() -> [OutputTest] {
        let words: [String?] = [nil] + SessionStatus.allCases.map(\.rawValue)
        var tests: [OutputTest] = []
        for before in words {
            for after in words {
                let raised = TaskAlertRules.statusKind(before: before, after: after)
                var test = OutputTest(
                    comment: "session status \(before ?? "none") to \(after ?? "none")",
                    flags: [raised == nil ? "Nothing" : "Raises"])
                test.before = before
                test.after = after
                test.raises = RemoteRulesGroup.word(raised)
                tests.append(test)
            }
        }
        return tests
    }

    /// Seconds since the newest alert was due: due later, just due, inside the window, at its
    /// edge, past it.
    static let newestAges: [Double] = [-30, 0, 59.9, 60, 120]

    static func coalescingTests() -> [OutputTest] {
        let taskKinds = AlertKind.allCases.filter(\.isTaskKind)
        var tests: [OutputTest] = []
        for kind in taskKinds {
            tests.append(coalescingTest(kind, newest: nil))
            for newestKind in taskKinds {
                for age in newestAges {
                    for waits in [true, false] {
                        tests.append(
                            coalescingTest(
                                kind, newest: TaskAlertRules.Newest(kind: newestKind.rawValue, age: age, waits: waits)))
                    }
                }
            }
        }
        return tests
    }

    static func coalescingTest(_ kind: AlertKind, newest: TaskAlertRules.Newest?) -> OutputTest {
        let answer = TaskAlertRules.coalescing(kind: kind, newest: newest)
        let about =
            newest.map {
                "the newest a \($0.kind ?? "?") \($0.age < 0 ? "due in \(seconds(-$0.age))" : "due \(seconds($0.age)) ago"), \($0.waits ? "waiting untried" : "tried")"
            } ?? "no alert before"
        var test = OutputTest(comment: "\(kind.rawValue), \(about)", flags: [answer.action.capitalized])
        test.kind = kind.rawValue
        test.newestKind = newest?.kind
        test.newestAge = newest?.age
        test.newestWaits = newest?.waits
        test.action = answer.action
        if case .queueAfterNewest(let seconds) = answer { test.dueAfterNewest = seconds }
        return test
    }

    static func set(_ kind: AlertKind, in settings: inout NotificationSettings, _ value: Bool) {
        switch kind {
        case .approval: settings.alertApprovals = value
        case .question: settings.alertQuestions = value
        case .taskComplete: settings.alertTaskComplete = value
        case .taskFailed: settings.alertTaskFailed = value
        case .taskPaused: settings.alertTaskPaused = value
        }
    }

    static func on(_ value: Bool) -> String { value ? "on" : "off" }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}
