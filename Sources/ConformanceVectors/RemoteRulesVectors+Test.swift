/// The fields of a remote-rules test (`UNBOUND-REMOTE-RULES-V1`): each group reads its own.
extension RemoteRulesGroup {
    /// One call of a rule and its answer.
    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        /// AlertDecision and MayQueuePush: the device's settings.
        public let settings: Settings?
        /// AlertDecision: the alert's kind (its payload's `type`), seconds since another device
        /// was active on the session (absent: none has been), and the decision.
        /// TaskAlertCoalescing: the new alert's kind.
        public let kind: String?
        public let idleElsewhere: Double?
        public let decision: String?
        /// MayQueuePush: the push's kind and whether it may be queued.
        public let push: String?
        public let mayQueue: Bool?
        /// RuntimeTaskKind and StatusTaskKind: whether there was a runtime status before, the
        /// status words before and after (absent: none), and the kind raised (`none`: nothing).
        public let hadStatus: Bool?
        public let before: String?
        public let after: String?
        public let raises: String?
        /// TaskAlertCoalescing: the token's newest alert for the session (absent: none), its
        /// age since its due time and whether it waits untried; what the new alert does, and
        /// for `queue_after` how long after the newest it is due.
        public let newestKind: String?
        public let newestAge: Double?
        public let newestWaits: Bool?
        public let action: String?
        public let dueAfterNewest: Double?
        /// ApprovalTransition and QuestionTransition: the row's status, whether its time has
        /// come, the call (`answer`, `cancel`, `reopen`, `close`, `expire`) with its arguments; what
        /// it does (`action` `takes`, `stays` or `over_limit`), the status it leaves or reads, and
        /// what it queues (`none`, `alerts`, `clearing` with `reason`).
        public let from: String?
        public let expired: Bool?
        public let event: String?
        public let verdict: String?
        public let closedAs: String?
        public let decisionMatches: Bool?
        public let reopened: Int?
        public let to: String?
        public let queues: String?
        public let reason: String?
        /// RequestRefusal (and `kind`: `approval` or `question`): a new request's generation,
        /// its expiry in seconds from now, its sealed body's length (absent: not canonical
        /// base64) and whether its version and generation match; the field refused, or `none`,
        /// with a refusal's `message` and `sqlState`.
        public let generation: Int64?
        public let expiresIn: Int64?
        public let bodyBytes: Int?
        public let bodyHeaderMatches: Bool?
        public let refused: String?
        /// DeliveryOutcome: an outbox row (whether it has `delivered_at` and `failed_at`, its
        /// `last_error` and `attempts`); its outcome, the reason shown (absent: none) and its
        /// rank. Unreached: what holds of a device without a row; its outcome and reason.
        public let delivered: Bool?
        public let failed: Bool?
        public let lastError: String?
        public let attempts: Int?
        public let outcome: String?
        public let rank: Int?
        public let settingOff: Bool?
        public let registeredLater: Bool?
        public let validToken: Bool?
        public let trusted: Bool?
        /// LiveActivityDue (and `event`: `update` or `end`): seconds from now until the token's
        /// waiting row and its latest row are due (absent: none); whether the event replaces the
        /// waiting row, and when its row is due (`now`, `waiting`, `after_previous`).
        public let waitingDueIn: Double?
        public let previousDueIn: Double?
        public let replaces: Bool?
        public let due: String?
        /// LiveActivityStatus: a runtime status's `coding_session.status` word (absent: none)
        /// and the live activity's status it shows.
        public let runtime: String?
        public let status: String?
        /// AlertPriority and LiveActivityPriority: the APNs priority (absent: nothing is queued).
        public let priority: Int?
        /// LiveActivityDue: for `after_previous`, how many seconds after the latest row.
        public let afterPrevious: Double?
        /// DeliverySpeaks: two rows of one device (outcome, when it last changed in seconds since
        /// 1970, id) and which speaks for it, `row` or `other`.
        public let rowOutcome: String?
        public let rowUpdatedAt: Double?
        public let rowId: Int64?
        public let otherOutcome: String?
        public let otherUpdatedAt: Double?
        public let otherRowId: Int64?
        public let speaks: String?
        /// AlertPayload (and `kind`, `decision`): the session's id, the deep-link scheme, the
        /// request's fields (approval and question; absent for task kinds), the device's
        /// `enable_time_sensitive` and badge. LiveActivityPayload (and `event`, `status`): the
        /// time in Unix seconds, the operation given (absent: none), the device's
        /// `show_notification_details`, the session's runtime `current_operation` and
        /// `todo_progress` (absent: none) and its start in Unix seconds (absent: none). Both: the
        /// payload's compact JSON with sorted keys, as the embedded remote writes it (absent:
        /// nothing is queued); the SQL's `jsonb` must equal it as JSON.
        public let sessionId: String?
        public let scheme: String?
        public let request: PayloadRequest?
        public let timeSensitive: Bool?
        public let badge: Int?
        public let stamp: Int64?
        public let operation: String?
        public let showDetails: Bool?
        public let runtimeOperation: String?
        public let todo: Todo?
        public let startedAt: Int64?
        public let payload: String?
        /// PushTokenRefusal: a registration's arguments (absent: not given) and its refusal
        /// (`refused`: the field, or `none`) with what it says (absent: none).
        public let token: String?
        public let tokenType: String?
        public let platform: String?
        public let environment: String?
        public let activityId: String?
        public let hasSession: Bool?
        public let previousToken: String?
        public let message: String?
        /// DeviceRegistration: the credential row of the device's id (`registered`; `mine`,
        /// `ended` and `sameCredential` absent without one) and what else holds; what the
        /// registration does (`answer`: `known`, `register` or the refusal), with a refusal's
        /// `message`, `hint` (absent: none) and `sqlState`. NewDeviceRoom: how many devices the
        /// user registered in the last hour; whether one more has `room`, and if not the
        /// refusal's words.
        public let registered: Bool?
        public let mine: Bool?
        public let ended: Bool?
        public let sameCredential: Bool?
        public let deviceOfAnother: Bool?
        public let revokedInLog: Bool?
        public let credentialInUse: Bool?
        public let answer: String?
        public let hint: String?
        public let sqlState: String?
        public let registeredInLastHour: Int?
        public let room: Bool?
        /// SilentPayload (and `push`: `clearing` or `handoff`; `payload`): a clearing's `kind`,
        /// `requestId`, `reason` and `badge`; a handoff's `sessionId` and the client it went to.
        public let requestId: String?
        public let handedOffTo: String?
        /// BadgeCounts (and `status`, `expiresIn`): whether the device asked the request, and
        /// whether it `counts` toward the device's badge.
        public let askedByDevice: Bool?
        public let counts: Bool?
        /// PushTokenPlacement: who holds the token a device registers (`none`, `this_device`,
        /// `another_device`, `another_user`), whether that row is valid, and where the token goes
        /// (`register` or `stays`).
        public let heldBy: String?
        public let holderValid: Bool?
        public let placement: String?
        /// EpochInForce: the current epoch and a pending reset's epoch (each absent: none), how
        /// many seconds ago the pending reset was written (absent without one), and the epoch in
        /// force (absent: none). TrustedDevice (and `trusted`): the epoch in force (absent: no
        /// log), the stored entries' marks in order, and the device asked about.
        public let currentEpoch: UInt32?
        public let pendingEpoch: UInt32?
        public let pendingAge: Int64?
        public let inForce: UInt32?
        public let marks: [TrustMark]?
        public let device: String?
        /// WitnessAdmission (and `device`, `currentEpoch`): the caller's user id, the call's
        /// witness body and signature (stored text), the server's clock in Unix seconds, the
        /// current epoch's head seq (absent: none), the device's witnesses (`epoch` absent: the
        /// current one); what the remote answers and the device's signatures after the call, in
        /// byte order.
        public let caller: String?
        public let body: String?
        public let signature: String?
        public let now: Int64?
        public let headSeq: UInt64?
        public let held: [HeldWitness]?
        public let admission: String?
        public let kept: [String]?
        /// CallerGate (and `device`, `trusted`: the call needs a certified device; `answer`,
        /// `message`, `hint`, `sqlState`): who signed in, the request's credential, the id the
        /// call names (absent: none), what the trust log says; the answer to the call naming the
        /// credential's device itself; whether the device is the calling one.
        public let signedIn: Bool?
        public let credential: String?
        public let named: String?
        public let trustLog: String?
        public let itself: String?
        public let calling: Bool?
        /// SessionDesktop (and `answer`, `message`, `sqlState`): the session row of the call's id
        /// (a ``RowHolder`` word). Asker (the same): the approval request's and the question's.
        /// QuestionAnswer (and `questionBy`, `mine`: the answering device is the caller's,
        /// `trusted`: the trust log certifies it, `bodyBytes` and `bodyHeaderMatches`: the sealed
        /// answer's, with `answer`, `message`, `sqlState`).
        public let runBy: String?
        public let approvalBy: String?
        public let questionBy: String?
        /// ApprovalAnswer (and `approvalBy`, `mine`, `verdict`, `bodyBytes`: the decision's
        /// length, absent when not canonical base64, `from`: the request's status, `trusted`,
        /// with `answer`, `message`, `sqlState`): the signature's length (absent: not canonical
        /// base64) and whether the decision names the answering device.
        public let signatureBytes: Int?
        public let namesDevice: Bool?
        /// RequestControl (and `event`: `cancel` or `reopen`, `approvalBy`, `reopened`, with
        /// `answer`, `message`, `sqlState`): whether the request keeps a control hash, the call's
        /// control (a ``RemoteRulesGroup/ControlWord``), its length (absent: none, or not
        /// canonical base64) and whether its SHA-256 is the one the request would keep.
        public let controlHash: Bool?
        public let control: String?
        public let controlBytes: Int?
        public let digestMatches: Bool?
        /// TrustLogCall (and `currentEpoch`, `headSeq`: the current epoch's head, with `answer`,
        /// `message`, `sqlState`): the call (a ``TrustLogCallRules/Call``), whether the sign-in is
        /// fresh, the highest epoch, whether a reset waits, whether the user has a legacy
        /// identity, seconds since the last reset request (absent: never), how many entries and
        /// backups the call carries (backups absent: none given), an append's epoch and first seq.
        public let call: String?
        public let freshSignIn: Bool?
        public let highestEpoch: UInt32?
        public let pending: Bool?
        public let legacyIdentity: Bool?
        public let lastResetAge: Int64?
        public let entryCount: Int?
        public let backupCount: Int?
        public let epoch: UInt32?
        public let firstSeq: UInt64?
        /// TrustEpochStatus (and `epoch`: the one an append names, `currentEpoch`, `pendingEpoch`:
        /// each absent: none): whether the named epoch has rows, and what it is (`open`,
        /// `pending_or_closed`, `not_current`).
        public let hasHead: Bool?
        public let epochStatus: String?
        /// TrustPlacement (and `placement`: where a checked entry goes, a
        /// ``TrustLogCallRules/Placement``; `currentEpoch`, with `answer`, `message`, `sqlState`):
        /// a genesis's prior epoch, whether
        /// a reset comes with an accept, a reset answer's verdict (absent: another type) and
        /// whether it names the reset it answers.
        public let priorEpoch: UInt32?
        public let withAccept: Bool?
        public let answerVerdict: String?
        public let namesReset: Bool?
    }
}
