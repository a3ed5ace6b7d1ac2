import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization

/// What a notification service extension shows for an alert (notifications.md, "Answering from
/// the lock screen"): it formats these with its own strings.
public struct NotificationDisplay: Sendable, Hashable {
    /// Whether the alert is an approval that opened and has not expired: offer Approve and Deny
    /// (`APPROVAL_REQUEST`); otherwise `APPROVAL_REQUEST_VIEW`, so no action is offered that
    /// cannot succeed.
    public var canAnswer = false
    /// The session's repository name from this device's store, sanitised: the subtitle that says
    /// which session. `nil` when the store does not know the session.
    public var sessionLabel: String?
    /// Only when details are shown: the approval's tool and summary, or the question's text,
    /// each through `LockScreenText.sanitised`.
    public var tool: String?
    public var summary: String?
    public var text: String?

    /// Creates a display.
    public init(
        canAnswer: Bool = false, sessionLabel: String? = nil, tool: String? = nil, summary: String? = nil,
        text: String? = nil
    ) {
        self.canAnswer = canAnswer
        self.sessionLabel = sessionLabel
        self.tool = tool
        self.summary = summary
        self.text = text
    }
}

extension ApprovalCenter {
    /// What a notification service extension shows for `payload`, any kind; never throws (an
    /// alert that cannot be opened shows its generic text and offers no action).
    ///
    /// Opens `sealed` with the session secret this device holds; without `sealed` and given a
    /// remote, it fetches the request or question by id (one request, 10 s at most).
    public static func notificationDisplay(
        _ payload: AlertPayload, store: DeviceStore, showDetails: Bool, remote: (any CompleteRemote)?
    ) async -> NotificationDisplay {
        var display = NotificationDisplay()
        if let session = try? await store.session(id: payload.sessionID),
            let repository = try? await store.repositories().first(where: { $0.id == session.repositoryID })
        {
            display.sessionLabel = LockScreenText.sanitised(repository.name)
        }
        guard !payload.kind.isTaskKind, let user = try? await store.requireIdentity().userID,
            let requestID = payload.requestID, let requester = payload.requesterDeviceID,
            let generation = payload.generation, let expiresAt = payload.expiresAt,
            (try? await checkAsker(
                local: store, session: payload.sessionID, requester: requester, generation: generation, trust: nil))
                != nil,
            let secret = try? await store.openReceived(sessionID: payload.sessionID, generation: generation).secret
        else { return display }
        var body = payload.sealed
        if body == nil, let remote {
            let kind = payload.kind
            body = try? await within(.seconds(10)) {
                kind == .question
                    ? try await remote.agentQuestion(id: requestID)?.body
                    : try await remote.approvalRequest(id: requestID)?.body
            }
        }
        guard let body else { return display }
        switch payload.kind {
        case .approval:
            let context = ApprovalRequestContext(
                userID: user, sessionID: payload.sessionID, requestID: requestID, requesterDeviceID: requester,
                expiresAt: expiresAt, generation: generation)
            guard let content = try? ApprovalCrypto.open(body: body, context: context, secret: secret) else {
                return display
            }
            display.canAnswer = expiresAt > UInt64(max(0, Date().timeIntervalSince1970))
            if showDetails {
                display.tool = LockScreenText.sanitised(content.tool)
                display.summary = LockScreenText.sanitised(content.summary)
            }
        case .question:
            let context = QuestionContext(
                userID: user, sessionID: payload.sessionID, questionID: requestID, requesterDeviceID: requester,
                expiresAt: expiresAt, generation: generation)
            if showDetails, let content = try? QuestionCrypto.open(body: body, context: context, secret: secret) {
                // A text question's text; for choices, the first question (the options stay in the app).
                display.text = LockScreenText.sanitised(content.text ?? content.choices?.first?.question ?? "")
            }
        case .taskComplete, .taskFailed, .taskPaused:
            break
        }
        return display
    }

    /// Answers an approval from a notification's action, in one call, for an action handler
    /// that iOS gives about 30 seconds: opens `sealed` (or GETs the request by id when the
    /// payload had no room for it), signs the decision over that body with this device's key
    /// and the verified head it pinned, and records it. No trust table is fetched: the desktop
    /// that asked verifies the decision. At most two requests.
    ///
    /// - Parameters:
    ///   - payload: The notification's payload.
    ///   - verdict: Approve or deny.
    ///   - store: This device's store (the app's, shared with its extension).
    ///   - remote: The remote, signed in as the store's user.
    ///   - deadline: The most time the call takes; then `SyncError` `.deadlineExceeded` and
    ///     nothing more is sent.
    /// - Returns: The remote's answer: accepted, or who decided first.
    /// - Throws: `AlertPayloadError` `.notAnApproval` or `.expired` before any request;
    ///   `SyncError` `.noIdentity` (no pinned trust log), `.wrongRole` (this device asked),
    ///   `.notLoggedIn`, `.userMismatch`, `.deadlineExceeded`; `CryptoError.authenticationFailure` for a body
    ///   not sealed for exactly this request (nothing is submitted); remote errors.
    public static func answerNotification(
        _ payload: AlertPayload, verdict: ApprovalVerdict, store: DeviceStore, remote: any CompleteRemote,
        deadline: Duration = .seconds(20)
    ) async throws -> ApprovalAnswered {
        guard payload.kind == .approval, let requestID = payload.requestID,
            let requester = payload.requesterDeviceID, let generation = payload.generation,
            let expiresAt = payload.expiresAt
        else { throw AlertPayloadError.notAnApproval }
        guard expiresAt > UInt64(max(0, Date().timeIntervalSince1970)) else { throw AlertPayloadError.expired }
        // The clock covers everything from here: the store's reads too.
        return try await within(deadline) {
            let device = try await SignedInDevice.check(store, remoteUser: remote.userID)
            let (identity, user) = (device.identity, device.userID)
            guard requester != identity.id else {
                throw SyncError(
                    code: .wrongRole,
                    message: "this device asked this question: answer it on another of the user's devices"
                )
            }
            guard let pin = try await store.trustLogPin() else {
                throw SyncError(
                    code: .noIdentity,
                    message:
                        "answering needs the user's trust log pinned on this device: pair it first (`sync-cli trust join`)"
                )
            }
            try await checkAsker(
                local: store, session: payload.sessionID, requester: requester, generation: generation, trust: nil)
            let secret = try await store.openReceived(sessionID: payload.sessionID, generation: generation).secret
            let signingKey = try await store.signingKey()
            let context = ApprovalRequestContext(
                userID: user, sessionID: payload.sessionID, requestID: requestID, requesterDeviceID: requester,
                expiresAt: expiresAt, generation: generation)
            var body = payload.sealed
            if body == nil {
                // A request the remote no longer has can no longer be answered.
                guard let row = try await remote.approvalRequest(id: requestID) else {
                    throw AlertPayloadError.expired
                }
                body = row.body
            }
            guard let body else { throw CryptoError.authenticationFailure }
            // Opened before anything is signed: a body the server swapped is never answered.
            _ = try ApprovalCrypto.open(body: body, context: context, secret: secret)
            try Task.checkCancellation()
            let decision = ApprovalDecision(
                userID: user, sessionID: payload.sessionID, requestID: requestID, deviceID: identity.id,
                verdict: verdict == .approve ? .approve : .deny,
                bodyHash: SHA256.hash(try ByteEncoding.bytes(base64: body)),
                read: try ApprovalCrypto.readProof(secret: secret, requestID: requestID, generation: generation),
                decidedAt: UInt64(max(0, Date().timeIntervalSince1970)),
                logHead: ApprovalDecision.LogHead(epoch: pin.epoch, seq: pin.headSeq, hash: pin.headHash))
            let signed = decision.signed(by: signingKey)
            return try await remote.answerApproval(
                requestID: requestID, deviceID: identity.id, verdict: verdict, decisionBody: signed.body,
                decisionSignature: signed.signature)
        }
    }

    /// Where an approval's alert went, device by device: delivered, sent, queued, failed,
    /// dropped, unreachable or off, with the reason (`AlertDeliveries.summary` says it in a line).
    ///
    /// - Throws: `RemoteStoreError` `.permissionDenied` for an id that is not one of the user's
    ///   approvals; `.missingFunction` on a remote without notifications round 2.
    public func deliveries(of alertID: UUID) async throws -> AlertDeliveries {
        try await remote.alertDeliveries(alertID: alertID)
    }

    /// Runs `body`, cancelled once `limit` passes: then `SyncError` `.deadlineExceeded` at
    /// once, even while `body` is blocked in a call that does not notice cancellation (a SQLite
    /// busy wait): the caller never waits past the deadline; `body` stops at its next check.
    package static func within<T: Sendable>(
        _ limit: Duration, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let race = DeadlineRace<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation, limit: limit, body: body)
            }
        } onCancel: {
            race.cancelled.withLock { $0 = true }
            race.finish(.failure(CancellationError()))
        }
    }
}
