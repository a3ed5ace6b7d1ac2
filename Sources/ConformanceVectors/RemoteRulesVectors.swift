import RemoteContract
import RemoteRules
import SyncModel

/// `UNBOUND-REMOTE-RULES-V1` (docs/testvectors.md, "remote-rules-v1.json"): the server's rules as
/// functions of their arguments, which the SQL (`private.rule_*`) and ``RemoteRules`` must both
/// answer exactly. Groups of `type` `AlertDecision` (`kind`, `settings`, `idleElsewhere`:
/// `decision`), `MayQueuePush` (`push`, `settings`: `mayQueue`), `RuntimeTaskKind` (`hadStatus`,
/// `before`, `after`: `raises`), `StatusTaskKind` (`before`, `after`: `raises`) and
/// `TaskAlertCoalescing` (`kind`, `newestKind`, `newestAge`, `newestWaits`: `action`,
/// `dueAfterNewest`), `RequestRefusal` (`kind`, `generation`, `expiresIn`, `bodyBytes`,
/// `bodyHeaderMatches`: `refused`), `ApprovalTransition` (`from`, `expired`, `event`, `verdict`,
/// `decisionMatches`, `reopened`: `action`, `to`, `queues`, `reason`) and `QuestionTransition`
/// (`from`, `expired`, `event`, `closedAs`: the same), `DeliveryOutcome` (`delivered`, `failed`,
/// `lastError`, `attempts`: `outcome`, `reason`, `rank`), `DeliverySpeaks` (`rowOutcome`,
/// `rowUpdatedAt`, `rowId`, `otherOutcome`, `otherUpdatedAt`, `otherRowId`: `speaks`), `Unreached` (`settingOff`,
/// `registeredLater`, `validToken`, `trusted`: `outcome`, `reason`) and `LiveActivityDue` (`event`,
/// `waitingDueIn`, `previousDueIn`: `replaces`, `due`, `afterPrevious`), `LiveActivityRefusal` (`event`,
/// `settingOff`, `trustLog`, `ended`: `refused`), `LiveActivityStatus` (`runtime`: `status`), `AlertPriority`
/// (`decision`: `priority`) and `LiveActivityPriority` (`event`, `status`: `priority`), `AlertPayload` (`kind`,
/// `sessionId`, `scheme`, `request`, `decision`, `timeSensitive`, `badge`: `payload`) and `LiveActivityPayload`
/// (`stamp`, `event`, `status`, `operation`, `showDetails`, `runtimeOperation`, `todo`, `startedAt`: `payload`),
/// `PushTokenRefusal` (`token`, `tokenType`, `platform`, `environment`, `activityId`, `hasSession`,
/// `previousToken`: `refused`, `message`), `DeviceRegistration` (`registered`, `mine`, `ended`, `sameCredential`,
/// `deviceOfAnother`, `revokedInLog`, `credentialInUse`: `answer`, `message`, `hint`, `sqlState`) and
/// `NewDeviceRoom` (`registeredInLastHour`: `room`, `message`, `hint`, `sqlState`), `SilentPayload` (`push`;
/// `kind`, `requestId`, `reason`, `badge` or `sessionId`, `handedOffTo`: `payload`) and `BadgeCounts` (`status`,
/// `askedByDevice`, `expiresIn`: `counts`), `PushTokenPlacement` (`heldBy`, `holderValid`: `placement`),
/// `EpochInForce` (`currentEpoch`, `pendingEpoch`, `pendingAge`: `inForce`) and `TrustedDevice` (`inForce`,
/// `marks`, `device`: `trusted`), `WitnessAdmission` (`caller`, `device`, `body`, `signature`, `now`,
/// `currentEpoch`, `headSeq`, `held`: `admission`, `kept`), `CallerGate` (`signedIn`, `credential`, `device`,
/// `named`, `trusted`, `trustLog`: `answer`, `message`, `hint`, `sqlState`, `itself`, `calling`), `SessionDesktop`
/// (`runBy`: `answer`, `message`, `sqlState`) and `Asker` (`approvalBy`, `questionBy`: the same), and
/// `QuestionAnswer` (`questionBy`, `mine`, `trusted`, `bodyBytes`, `bodyHeaderMatches`: the same), and
/// `ApprovalAnswer` (`approvalBy`, `mine`, `verdict`, `bodyBytes`, `signatureBytes`, `from`, `trusted`,
/// `namesDevice`: the same), and `RequestControl` (`event`, `approvalBy`, `controlHash`, `control`,
/// `controlBytes`, `digestMatches`, `reopened`: the same), and `QuestionClose` (`closedAs`, `questionBy`: the
/// same), and `TrustLogCall` (`call`, `freshSignIn`, `currentEpoch`, `highestEpoch`, `pending`, `legacyIdentity`,
/// `lastResetAge`, `headSeq`, `entryCount`, `backupCount`, `epoch`, `firstSeq`: the same), and `SessionEvent` (`mine`,
/// `runBy`, `kind`: the same), and `TrustEpochStatus` (`epoch`, `currentEpoch`, `pendingEpoch`, `hasHead`:
/// `epochStatus`) and `TrustPlacement` (`placement`, `priorEpoch`, `currentEpoch`, `withAccept`,
/// `answerVerdict`, `namesReset`: `answer`, `message`, `sqlState`).
/// Every test is valid: the
/// answer is the rule's.
public struct RemoteRulesGroup: VectorGroup {
    /// Which rule the group's tests take.
    public enum Kind: String, Decodable, Sendable {
        case alertDecision = "AlertDecision"
        case mayQueuePush = "MayQueuePush"
        case runtimeTaskKind = "RuntimeTaskKind"
        case statusTaskKind = "StatusTaskKind"
        case taskAlertCoalescing = "TaskAlertCoalescing"
        case requestRefusal = "RequestRefusal"
        case approvalTransition = "ApprovalTransition"
        case questionTransition = "QuestionTransition"
        case deliveryOutcome = "DeliveryOutcome"
        case deliverySpeaks = "DeliverySpeaks"
        case unreached = "Unreached"
        case liveActivityDue = "LiveActivityDue"
        case liveActivityRefusal = "LiveActivityRefusal"
        case liveActivityStatus = "LiveActivityStatus"
        case alertPriority = "AlertPriority"
        case liveActivityPriority = "LiveActivityPriority"
        case alertPayload = "AlertPayload"
        case liveActivityPayload = "LiveActivityPayload"
        case pushTokenRefusal = "PushTokenRefusal"
        case deviceRegistration = "DeviceRegistration"
        case newDeviceRoom = "NewDeviceRoom"
        case silentPayload = "SilentPayload"
        case badgeCounts = "BadgeCounts"
        case pushTokenPlacement = "PushTokenPlacement"
        case epochInForce = "EpochInForce"
        case trustedDevice = "TrustedDevice"
        case witnessAdmission = "WitnessAdmission"
        case callerGate = "CallerGate"
        case sessionDesktop = "SessionDesktop"
        case asker = "Asker"
        case questionAnswer = "QuestionAnswer"
        case approvalAnswer = "ApprovalAnswer"
        case requestControl = "RequestControl"
        case questionClose = "QuestionClose"
        case trustLogCall = "TrustLogCall"
        case trustEpochStatus = "TrustEpochStatus"
        case trustPlacement = "TrustPlacement"
        case sessionEvent = "SessionEvent"
    }

    public let type: Kind
    public let tests: [Test]

    /// A device's notification settings under the names of `public.notification_settings`'s
    /// columns, so that the SQL check can make a row of them as they are.
    public struct Settings: Codable, Sendable, Hashable {
        /// The settings these fields name.
        public var value: NotificationSettings

        /// The settings as the file writes them.
        public init(_ value: NotificationSettings) { self.value = value }

        /// A column's name as a key.
        struct Column: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Column.self)
            var value = NotificationSettings.defaults
            // Every column is required: a file that leaves one out says nothing about it.
            for key in NotificationSettings.Key.allCases {
                value[key] = try container.decode(Bool.self, forKey: Column(stringValue: key.column))
            }
            self.value = value
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Column.self)
            for key in NotificationSettings.Key.allCases {
                try container.encode(value[key], forKey: Column(stringValue: key.column))
            }
        }
    }

    /// A kind raised as the file writes it.
    public static func word(_ kind: AlertKind?) -> String { kind?.rawValue ?? "none" }

    /// `nil` when the test passed, else why not.
    static func check(_ kind: Kind, _ test: Test) -> String? {
        let outcome: Bool?
        switch kind {
        case .alertDecision:
            guard let alert = test.kind.flatMap(AlertKind.init(rawValue:)), let settings = test.settings?.value,
                let expected = test.decision.flatMap(AlertDecision.init(rawValue:))
            else { return "fields: missing or malformed" }
            outcome =
                NotificationRules.alertDecision(kind: alert, settings: settings, idleElsewhere: test.idleElsewhere)
                == expected
        case .mayQueuePush:
            guard let push = test.push.flatMap(QueuedPushKind.init(rawValue:)), let settings = test.settings?.value,
                let expected = test.mayQueue
            else { return "fields: missing or malformed" }
            outcome = NotificationRules.mayQueue(push, settings: settings) == expected
        case .runtimeTaskKind:
            guard let hadStatus = test.hadStatus, let expected = test.raises else { return "fields: missing" }
            outcome =
                word(TaskAlertRules.runtimeKind(hadStatus: hadStatus, before: test.before, after: test.after))
                == expected
        case .statusTaskKind:
            guard let expected = test.raises else { return "fields: missing" }
            outcome = word(TaskAlertRules.statusKind(before: test.before, after: test.after)) == expected
        case .taskAlertCoalescing:
            guard let alert = test.kind.flatMap(AlertKind.init(rawValue:)), let action = test.action else {
                return "fields: missing or malformed"
            }
            let newest = test.newestAge.map {
                TaskAlertRules.Newest(kind: test.newestKind, age: $0, waits: test.newestWaits ?? false)
            }
            let answer = TaskAlertRules.coalescing(kind: alert, newest: newest)
            var due: Double?
            if case .queueAfterNewest(let seconds) = answer { due = seconds }
            outcome = answer.action == action && due == test.dueAfterNewest
        case .requestRefusal:
            guard let kind = test.kind.flatMap(RequestRules.Kind.init(rawValue:)), let generation = test.generation,
                let expiresIn = test.expiresIn, let header = test.bodyHeaderMatches, let expected = test.refused
            else { return "fields: missing or malformed" }
            let refused = RequestRules.refusal(
                kind, generation: generation, expiresIn: expiresIn, bodyBytes: test.bodyBytes,
                bodyHeaderMatches: header)
            let words = refused.map { RequestRules.NewRequestRefusal(kind, $0) }
            outcome =
                (refused?.rawValue ?? "none") == expected
                && (words.map { Self.words($0, test) }
                    ?? (test.message == nil && test.hint == nil && test.sqlState == nil))
        case .approvalTransition:
            guard let status = test.from.flatMap(ApprovalStatus.init(rawValue:)), let expired = test.expired,
                let event = approvalEvent(test)
            else { return "fields: missing or malformed" }
            outcome = matches(RequestRules.transition(approval: status, expired: expired, on: event), test)
        case .questionTransition:
            guard let status = test.from.flatMap(QuestionStatus.init(rawValue:)), let expired = test.expired,
                let event = questionEvent(test)
            else { return "fields: missing or malformed" }
            outcome = matches(RequestRules.transition(question: status, expired: expired, on: event), test)
        case .deliveryOutcome:
            guard let delivered = test.delivered, let failed = test.failed, let attempts = test.attempts,
                let expected = test.outcome, let rank = test.rank
            else { return "fields: missing" }
            let answer = DeliveryRules.outcome(
                delivered: delivered, failed: failed, lastError: test.lastError, attempts: attempts)
            outcome =
                answer.outcome.rawValue == expected && answer.reason == test.reason
                && DeliveryRules.rank(answer.outcome) == rank
        case .deliverySpeaks:
            guard let row = candidate(test.rowOutcome, test.rowUpdatedAt, test.rowId),
                let other = candidate(test.otherOutcome, test.otherUpdatedAt, test.otherRowId), let speaks = test.speaks
            else { return "fields: missing or malformed" }
            outcome = (DeliveryRules.speaks(row, over: other) ? "row" : "other") == speaks
        case .unreached:
            guard let off = test.settingOff, let later = test.registeredLater, let valid = test.validToken,
                let trusted = test.trusted, let expected = test.outcome
            else { return "fields: missing" }
            let answer = DeliveryRules.unreached(
                settingOff: off, registeredLater: later, validToken: valid, trusted: trusted)
            outcome = answer.outcome.rawValue == expected && answer.reason == test.reason
        case .liveActivityDue:
            guard let event = test.event.flatMap(LiveActivityEvent.init(rawValue:)), let replaces = test.replaces,
                let due = test.due
            else { return "fields: missing or malformed" }
            let answer = LiveActivityQueueing.placement(
                end: event == .end, waitingDueIn: test.waitingDueIn, previousDueIn: test.previousDueIn)
            outcome =
                answer.replaces == replaces && answer.due.rawValue == due && answer.afterPrevious == test.afterPrevious
        case .liveActivityRefusal:
            guard let event = test.event.flatMap(LiveActivityEvent.init(rawValue:)), let settingOff = test.settingOff,
                let log = test.trustLog.flatMap(CallerTrustLog.init(rawValue:)), let ended = test.ended,
                let expected = test.refused
            else { return "fields: missing or malformed" }
            let refusal = LiveActivityQueueing.refusal(
                end: event == .end, settingOff: settingOff, vouched: log.certified, ended: ended)
            outcome = (refusal?.rawValue ?? "none") == expected
        case .liveActivityStatus:
            guard let expected = test.status else { return "fields: missing" }
            outcome = LiveActivityRules.status(test.runtime.flatMap(RuntimeStatus.State.init(rawValue:))) == expected
        case .alertPriority:
            guard let decision = test.decision.flatMap(AlertDecision.init(rawValue:)) else {
                return "fields: missing or malformed"
            }
            outcome = NotificationRules.priority(decision) == test.priority
        case .liveActivityPriority:
            guard let event = test.event.flatMap(LiveActivityEvent.init(rawValue:)), let expected = test.priority
            else { return "fields: missing or malformed" }
            outcome = LiveActivityQueueing.priority(end: event == .end, status: test.status) == expected
        case .alertPayload, .liveActivityPayload, .silentPayload:
            guard let answer = payloadMatches(kind, test) else { return "fields: missing or malformed" }
            outcome = answer
        case .epochInForce, .trustedDevice:
            guard let answer = trustGateMatches(kind, test) else { return "fields: missing or malformed" }
            outcome = answer
        case .witnessAdmission:
            guard let answer = witnessMatches(test) else { return "fields: missing or malformed" }
            outcome = answer
        case .callerGate:
            guard let answer = callerGateMatches(test) else { return "fields: missing or malformed" }
            outcome = answer
        case .sessionDesktop, .asker:
            guard let answer = requestCallerMatches(kind, test) else { return "fields: missing or malformed" }
            outcome = answer
        case .questionAnswer:
            guard let answer = questionAnswerMatches(test) else { return "fields: missing or malformed" }
            outcome = answer
        case .requestControl:
            guard let answer = requestControlMatches(test) else { return "fields: missing or malformed" }
            outcome = answer
        case .questionClose:
            guard let answer = questionCloseMatches(test) else { return "fields: missing or malformed" }
            outcome = answer
        case .trustLogCall:
            guard let answer = trustLogCallMatches(test) else { return "fields: missing or malformed" }
            outcome = answer
        case .trustEpochStatus:
            guard let answer = trustEpochStatusMatches(test) else { return "fields: missing or malformed" }
            outcome = answer
        case .trustPlacement:
            guard let answer = trustPlacementMatches(test) else { return "fields: missing or malformed" }
            outcome = answer
        case .sessionEvent:
            guard let answer = sessionEventMatches(test) else { return "fields: missing or malformed" }
            outcome = answer
        case .approvalAnswer:
            guard let answer = approvalAnswerMatches(test) else { return "fields: missing or malformed" }
            outcome = answer
        case .badgeCounts:
            guard let status = test.status, let asked = test.askedByDevice, let expiresIn = test.expiresIn,
                let counts = test.counts
            else { return "fields: missing" }
            outcome =
                NotificationRules.countsTowardBadge(status: status, askedByDevice: asked, expiresIn: expiresIn)
                == counts
        case .pushTokenPlacement:
            guard let holder = test.heldBy.flatMap(PushTokenRules.Holder.init(rawValue:)), let valid = test.holderValid,
                let expected = test.placement
            else { return "fields: missing or malformed" }
            outcome = PushTokenRules.placement(heldBy: holder, valid: valid).rawValue == expected
        case .pushTokenRefusal:
            guard let token = test.token, let hasSession = test.hasSession, let expected = test.refused else {
                return "fields: missing"
            }
            let refusal = PushTokenRules.refusal(
                token: token, type: test.tokenType, platform: test.platform, environment: test.environment,
                activityID: test.activityId, hasSession: hasSession, previous: test.previousToken)
            outcome = (refusal?.rawValue ?? "none") == expected && refusal?.message == test.message
        case .deviceRegistration:
            guard let registered = test.registered, let other = test.deviceOfAnother, let revoked = test.revokedInLog,
                let inUse = test.credentialInUse, let expected = test.answer
            else { return "fields: missing" }
            var row: CredentialRules.Registered?
            if registered {
                guard let mine = test.mine, let ended = test.ended, let same = test.sameCredential else {
                    return "fields: missing"
                }
                row = .init(mine: mine, ended: ended, sameCredential: same)
            }
            let answer = CredentialRules.registration(
                registered: row, deviceOfAnother: other, revokedInLog: revoked, credentialInUse: inUse)
            switch answer {
            case .known: outcome = expected == "known" && test.message == nil
            case .register: outcome = expected == "register" && test.message == nil
            case .refused(let refusal): outcome = expected == refusal.rawValue && words(refusal, test)
            }
        case .newDeviceRoom:
            guard let count = test.registeredInLastHour, let room = test.room else { return "fields: missing" }
            let answer = CredentialRules.roomForNewDevice(registeredInLastHour: count)
            outcome = answer == room && (answer ? test.message == nil : words(CredentialRules.Refusal.limit, test))
        }
        return VectorVerifier.judge(test.result, outcome)
    }

    /// Whether a test names `refusal`'s words, hint and SQLSTATE.
    static func words(_ refusal: some RuleRefusal, _ test: Test) -> Bool {
        test.message == refusal.message && test.hint == refusal.hint && test.sqlState == refusal.sqlState
    }

    /// Whether a test's `answer` is `refusal` with its words, hint and SQLSTATE, or, for none,
    /// `allowed` with none of them.
    static func answers<Refusal: RuleRefusal & RawRepresentable<String>>(
        _ test: Test, _ refusal: Refusal?, allowed: String = "allowed"
    ) -> Bool {
        guard let refusal else {
            return test.answer == allowed && test.message == nil && test.hint == nil && test.sqlState == nil
        }
        return test.answer == refusal.rawValue && words(refusal, test)
    }

    static func candidate(_ outcome: String?, _ updatedAt: Double?, _ id: Int64?) -> DeliveryRules.Candidate? {
        guard let outcome = outcome.flatMap(DeliveryOutcome.init(rawValue:)), let updatedAt, let id else { return nil }
        return DeliveryRules.Candidate(outcome: outcome, updatedAt: updatedAt, id: id)
    }

    static func approvalEvent(_ test: Test) -> RequestRules.ApprovalEvent? {
        switch test.event {
        case "answer": test.verdict.flatMap(ApprovalVerdict.init(rawValue:)).map { .answer($0) }
        case "cancel": .cancel
        case "reopen":
            test.decisionMatches.flatMap { matches in
                test.reopened.map { .reopen(decisionMatches: matches, reopened: $0) }
            }
        case "expire": .expire
        default: nil
        }
    }

    static func questionEvent(_ test: Test) -> RequestRules.QuestionEvent? {
        switch test.event {
        case "answer": .answer
        case "close": test.closedAs.flatMap(QuestionStatus.init(rawValue:)).map { .close($0) }
        case "expire": .expire
        default: nil
        }
    }

    /// Whether a transition is the one the test names, word for word.
    static func matches<Status: RawRepresentable<String>>(
        _ transition: RequestRules.Transition<Status>, _ test: Test
    ) -> Bool {
        let (push, reason) = transition.push.words
        return transition.words.action == test.action && transition.words.status.rawValue == test.to
            && push == test.queues && reason == test.reason
    }
}
