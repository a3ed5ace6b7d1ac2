import DeviceTrust
import Foundation
import LocalStore
import Logging
import RemoteRules
import RemoteStore
import SecretCrypto
import SyncModel

/// How an approval request ended, as the asking desktop verified it.
public enum ApprovalOutcome: Sendable, Hashable, CustomStringConvertible {
    /// A certified device that held the session's secret approved this very request.
    case approved(by: UUID)
    /// A certified device that held the session's secret denied it.
    case denied(by: UUID)
    /// Nobody answered in time (or only with answers that did not verify).
    case expired
    /// The requester cancelled it.
    case cancelled

    /// The outcome's name: `approved`, `denied`, `expired` or `cancelled`.
    public var name: String {
        switch self {
        case .approved: "approved"
        case .denied: "denied"
        case .expired: "expired"
        case .cancelled: "cancelled"
        }
    }

    /// The device whose verified answer decided, for `approved` and `denied`.
    public var device: UUID? {
        switch self {
        case .approved(let device), .denied(let device): device
        case .expired, .cancelled: nil
        }
    }

    public var description: String {
        switch self {
        case .approved(let device): "approved by \(device.canonical)"
        case .denied(let device): "denied by \(device.canonical)"
        case .expired: "expired"
        case .cancelled: "cancelled"
        }
    }

    /// The outcome as the end of a sentence about the request: "was approved by …", "expired".
    public var sentence: String {
        switch self {
        case .approved, .denied, .cancelled: "was \(description)"
        case .expired: "expired"
        }
    }
}

/// An answer the asking desktop refused: the server's row said decided, but the signed decision
/// did not hold up (forged, unsigned, by a revoked or uncertified device, for another request or
/// body, or disagreeing with the row). The request stays pending for the desktop.
public struct ApprovalRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    public var requestID: UUID
    /// The device the row or the decision named, when it named one.
    public var deviceID: UUID?
    /// Why, without any of the request's content.
    public var reason: String

    public var description: String { "answer to \(requestID.canonical) refused: \(reason)" }
}

/// A request this desktop is about to send: what another process needs to cancel it.
public struct AskedRequest: Sendable, Hashable {
    public let requestID: UUID
    public let sessionID: UUID
    /// The control (base64 of 32 random bytes): it lets its holder cancel the request. Keep it
    /// private to this desktop.
    public let control: String?
    /// Unix seconds.
    public let expiresAt: UInt64
}

/// An approval request this device opened: its row and what it asks. Holds the proof that this
/// device derived the request's key (`read`), never the session secret.
public struct OpenedApproval: Sendable {
    public let request: ApprovalRequestRow
    public let content: ApprovalContent
    let read: [UInt8]
}

/// Approvals end to end (approvals.md), as library calls: a desktop asks and waits; a phone lists,
/// opens and answers; a notification service extension opens a push's sealed body.
///
/// The server carries only the sealed question and the signed answer. The question is sealed
/// under a key derived from the session secret, so only devices that hold the secret read it;
/// the answer is signed by the answering device's Ed25519 key and counts only when the asking
/// desktop verifies it against the user's trust (a certificate under the pinned identity, no
/// revocation), against its own copy of the request, and against the proof that the answering
/// device derived the request's key. Approvals need a pinned identity on both sides.
public struct ApprovalCenter: Sendable {
    public let local: DeviceStore
    public let remote: any CompleteRemote
    let logger: Logger?

    /// The shortest and longest time a request may wait, in seconds: the server's own rule
    /// (`RequestRules.expiryWindow(_:)` in RemoteRules), which refuses a request outside it.
    public static let timeoutSeconds: ClosedRange<Int64> = RequestRules.expiryWindow(.approval)
    /// ``timeoutSeconds`` as durations.
    public static let timeouts: ClosedRange<Duration> =
        .seconds(timeoutSeconds.lowerBound) ... .seconds(timeoutSeconds.upperBound)

    /// Creates the center for this device's store and the signed-in remote.
    public init(local: DeviceStore, remote: any CompleteRemote, logger: Logger? = nil) {
        self.local = local
        self.remote = remote
        self.logger = logger
    }

    /// The verified trust records; approvals refuse to run without a pinned identity.
    func trust() async throws -> TrustSnapshot {
        guard let snapshot = try await TrustSnapshot.load(local: local, remote: remote) else {
            throw SyncError(
                code: .noIdentity,
                message: "approvals need the user's identity pinned on this device: pair your devices first "
                    + "(`sync-cli trust init` on the first device, `sync-cli trust join` here)")
        }
        return snapshot
    }

    // MARK: - Asking (the desktop that runs the session)

    /// Checks, without asking anything, that this device can ask about `session`: it is a
    /// desktop and runs that session. ``request(session:tool:summary:detail:timeout:pollInterval:onRefused:onDeliveries:onAsk:)``
    /// makes the same checks first; a caller that says "asking…" before the wait calls this
    /// before saying it.
    ///
    /// - Throws: ``SyncError`` `.wrongRole` on a phone, `.unknownSession` for a session another
    ///   device runs.
    public func checkCanAsk(session: UUID) async throws {
        let identity = try await local.requireIdentity()
        guard identity.role == .desktop else {
            throw SyncError(
                code: .wrongRole,
                message: "approval requests are asked by the desktop that runs the session; this store is a phone's")
        }
        do {
            _ = try await local.ownSealedSecret(sessionID: session)
        } catch let error as LocalStoreError where error.code == .notFound {
            throw SyncError(
                code: .unknownSession,
                message:
                    "session \(session.canonical) is not one this device runs: ask from the desktop that started it")
        }
    }

    /// Asks the user's other devices whether the agent may run `tool`, and waits for a verified
    /// answer, the request's end, or cancellation.
    ///
    /// The request is sealed under the session's current secret and kept here before it is sent;
    /// the request row is read every `pollInterval` until it ends. A decided row whose signed
    /// decision does not verify is reported to `onRefused` and the request stays pending here: the
    /// agent is never told "approved" on the server's word. A poll the remote does not answer (its
    /// retries spent: a network error, HTTP 429 or 5xx) is logged and made again at the next
    /// interval; it never ends the request. Cancelling the task cancels the request.
    ///
    /// - Parameters:
    ///   - session: A session this desktop runs.
    ///   - tool: The tool the agent wants to run.
    ///   - summary: One line saying what it would do.
    ///   - detail: More, when there is more to say.
    ///   - timeout: How long the question stands, within ``timeouts`` (5 to 600 seconds).
    ///   - pollInterval: Time between reads of the request row.
    ///   - onRefused: Told of each answer whose signature or content did not verify.
    ///   - onDeliveries: Told where the alert went: with the request's answer, then on each
    ///     change, read every 2 seconds until no entry can change or the request ends. A failed
    ///     read is logged and tried again; it never ends the request.
    ///   - onAsk: Told the request's id and control just before it is sent, so that another
    ///     process can cancel it if this one dies (an agent's hook keeps them in the store);
    ///     nothing is sent when it throws.
    /// - Returns: The outcome.
    /// - Throws: ``SyncError`` `.noIdentity` without a pinned identity, `.unknownSession`;
    ///   `CryptoError.invalidApprovalContent` for content out of limits; remote errors;
    ///   `CancellationError` (after cancelling the request).
    public func request(
        session: UUID, tool: String, summary: String, detail: String = "", timeout: Duration = .seconds(60),
        pollInterval: Duration = .seconds(1), onRefused: (@Sendable (ApprovalRefusal) -> Void)? = nil,
        onDeliveries: (@Sendable (AlertDeliveries) -> Void)? = nil,
        onAsk: (@Sendable (AskedRequest) async throws -> Void)? = nil
    ) async throws -> ApprovalOutcome {
        guard Self.timeouts.contains(timeout) else { throw CryptoError.invalidApprovalContent }
        let content = try ApprovalContent(tool: tool, summary: summary, detail: detail)
        try await checkCanAsk(session: session)
        try await rotateIfRevoked(session: session, trust: try await trust())
        let identity = try await local.requireIdentity()
        let user = try await signedInUser()
        let sealed: OwnSealedSecret
        do {
            sealed = try await local.ownSealedSecret(sessionID: session)
        } catch let error as LocalStoreError where error.code == .notFound {
            throw SyncError(code: .unknownSession, message: "session \(session.canonical) is not one this device runs")
        }
        let secret = try await local.openOwnSecret(sessionID: session, generation: sealed.generation)
        let requestID = UUID()
        let expiresAt = UInt64(Date().timeIntervalSince1970) + UInt64(timeout.components.seconds)
        let context = ApprovalRequestContext(
            userID: user, sessionID: session, requestID: requestID, requesterDeviceID: identity.id,
            expiresAt: expiresAt,
            generation: sealed.generation)
        let body = ByteEncoding.base64(try ApprovalCrypto.seal(content, context: context, secret: secret))
        let sent = SentApproval(
            requestID: requestID, sessionID: session, body: body, generation: sealed.generation, expiresAt: expiresAt)
        try await local.recordSentApproval(sent)
        let read = try ApprovalCrypto.readProof(secret: secret, requestID: requestID, generation: sealed.generation)
        // The control: 32 random bytes only this process holds. The server keeps their hash and
        // lets only their holder cancel the request or reopen it after a refused decision.
        let control = SecureBytes(randomCount: 32).withUnsafeBytes { [UInt8]($0) }
        try await onAsk?(
            AskedRequest(
                requestID: requestID, sessionID: session, control: ByteEncoding.base64(control), expiresAt: expiresAt))
        let asked = try await remote.requestApproval(
            sessionID: session, requestID: requestID, requesterDeviceID: identity.id, body: body,
            generation: sealed.generation, expiresAt: expiresAt,
            controlHash: ByteEncoding.base64(SHA256.hash(control)))
        logger?.info("approval \(requestID.canonical) asked for session \(session.canonical)")
        let controlText = ByteEncoding.base64(control)
        let watcher = onDeliveries.map { DeliveryWatcher(center: self, alertID: requestID, report: $0) }
        await watcher?.start(with: asked.devices)
        do {
            return try await wait(
                for: sent, read: read, identity: identity.id, user: user, control: controlText,
                pollInterval: pollInterval, onRefused: onRefused, watcher: watcher)
        } catch is CancellationError {
            // Uncancelled: this task is, and so would be the call.
            _ = await uncancelled { try? await remote.cancelApproval(requestID: requestID, control: controlText) }
            throw CancellationError()
        }
    }

    func signedInUser() async throws -> UUID {
        try await SignedInDevice.check(local, remoteUser: remote.userID).userID
    }

    /// Polls the request until it ends with a verified answer, expires or is cancelled. A
    /// decision it refuses is reported once and reopened with `control`, so that the question
    /// stays open for the genuine answer (approvals.md, "Who is asked, who may answer").
    func wait(
        for sent: SentApproval, read: [UInt8], identity: UUID, user: UUID, control: String, pollInterval: Duration,
        onRefused: (@Sendable (ApprovalRefusal) -> Void)?, watcher: DeliveryWatcher? = nil
    ) async throws -> ApprovalOutcome {
        var refused = Set<String>()
        var mayReopen = true
        var unanswered = false
        while true {
            try Task.checkCancellation()
            do {
                if let row = try await remote.approvalRequest(id: sent.requestID) {
                    switch row.status(at: Date()) {
                    case .pending: break
                    case .expired: return .expired
                    case .cancelled: return .cancelled
                    case .approved, .denied:
                        let verdict = try await verify(row, against: sent, read: read, identity: identity, user: user)
                        switch verdict {
                        case .success(let outcome): return outcome
                        case .failure(let refusal):
                            // Reported once per distinct answer; the request stays pending here.
                            if refused.insert(refusal.reason + (row.decisionSignature ?? "")).inserted {
                                logger?.warning("\(refusal)")
                                onRefused?(refusal)
                            }
                            if mayReopen { mayReopen = try await reopen(row, control: control) }
                        }
                    }
                }
                unanswered = false
            } catch let error as RemoteStoreError where error.isTransient {
                // One poll the remote did not answer (its retries spent) does not end a question
                // that stands for minutes: nothing was accepted, the next poll asks again. Said
                // once per outage, not once per poll.
                if !unanswered {
                    logger?.warning("approval \(sent.requestID.canonical): the remote did not answer a poll: \(error)")
                }
                unanswered = true
            }
            if UInt64(Date().timeIntervalSince1970) >= sent.expiresAt + 30 { return .expired }
            await watcher?.poll()
            try await Task.sleep(for: pollInterval)
        }
    }

    /// Drops a refused decision on the server. Returns whether to keep reopening: a failed call
    /// is tried again at the next poll; past the limit of reopenings (or against a remote without
    /// them) the request waits for its expiry.
    func reopen(_ row: ApprovalRequestRow, control: String) async throws -> Bool {
        guard let signature = row.decisionSignature else { return true }
        do {
            _ = try await remote.reopenApproval(requestID: row.id, decisionSignature: signature, control: control)
            return true
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as RemoteStoreError
            where error.code == .limitExceeded || error.code == .missingFunction || error.code == .permissionDenied
        {
            logger?.warning("approval \(row.id.canonical): the refused decision stays; waiting for expiry: \(error)")
            return false
        } catch {
            logger?.warning("approval \(row.id.canonical): the refused decision was not dropped: \(error)")
            return true
        }
    }

    // MARK: - Answering (a phone, a tablet)

    /// The user's pending requests that another device made.
    public func pending() async throws -> [ApprovalRequestRow] {
        let me = try await local.requireIdentity().id
        let now = Date()
        return try await remote.approvalRequests(status: .pending).filter {
            $0.requesterDeviceID != me && $0.status(at: now) == .pending
        }
    }

    /// Opens a request with the session secret of its generation that this device holds, once
    /// it is believed: sealed under the newest generation this device holds, by the session's
    /// desktop (the device that sealed that secret to this one), certified and not revoked.
    ///
    /// - Throws: ``SyncError`` `.noIdentity` without a pinned identity, `.untrustedAsker` for a
    ///   request this device does not believe; `LocalStoreError`
    ///   `.notFound` when this device holds no secret of that generation;
    ///   `CryptoError.authenticationFailure` for a body that is not sealed for exactly this
    ///   request (swapped or forged by the server).
    public func open(_ request: ApprovalRequestRow) async throws -> OpenedApproval {
        let trust = try await trust()
        let user = try await signedInUser()
        guard request.userID == user else { throw CryptoError.authenticationFailure }
        guard request.requesterDeviceID != (try await local.requireIdentity().id) else {
            throw SyncError(
                code: .wrongRole, message: "this device asked this question: answer it on another of the user's devices"
            )
        }
        try await Self.checkAsker(
            local: local, session: request.sessionID, requester: request.requesterDeviceID,
            generation: request.generation, trust: trust)
        let secret = try await local.openReceived(sessionID: request.sessionID, generation: request.generation).secret
        let context = ApprovalRequestContext(
            userID: user, sessionID: request.sessionID, requestID: request.id,
            requesterDeviceID: request.requesterDeviceID,
            expiresAt: request.expiresAt, generation: request.generation)
        let content = try ApprovalCrypto.open(body: request.body, context: context, secret: secret)
        let read = try ApprovalCrypto.readProof(secret: secret, requestID: request.id, generation: request.generation)
        return OpenedApproval(request: request, content: content, read: read)
    }

    /// Answers an opened request: a decision signed with this device's signing key, over the
    /// request's exact body and the proof this device derived its key.
    ///
    /// - Returns: The remote's answer: accepted, or who decided first.
    public func answer(
        _ opened: OpenedApproval, verdict: ApprovalVerdict, now: Date = Date()
    ) async throws -> ApprovalAnswered {
        let identity = try await local.requireIdentity()
        let user = try await signedInUser()
        let request = opened.request
        guard let head = try await trust().head else {
            throw SyncError(
                code: .trustLogMissing,
                message: "answering needs the user's trust log verified here (a decision carries its head)")
        }
        let decision = ApprovalDecision(
            userID: user, sessionID: request.sessionID, requestID: request.id, deviceID: identity.id,
            verdict: verdict == .approve ? .approve : .deny,
            bodyHash: SHA256.hash(try ByteEncoding.bytes(base64: request.body)),
            read: opened.read, decidedAt: UInt64(max(0, now.timeIntervalSince1970)),
            logHead: ApprovalDecision.LogHead(epoch: head.epoch, seq: head.seq, hash: head.hash))
        let signed = decision.signed(by: try await local.signingKey())
        return try await remote.answerApproval(
            requestID: request.id, deviceID: identity.id, verdict: verdict, decisionBody: signed.body,
            decisionSignature: signed.signature)
    }

    // MARK: - A notification service extension

    /// Opens the `sealed` field of an approval push with the session secret this device holds,
    /// and returns what the request asks, nothing else.
    ///
    /// - Parameters:
    ///   - payload: The push's JSON (`type` `approval`, `requestId`, `sessionId`,
    ///     `requesterDeviceId`, `generation`, `expiresAt`, `sealed`).
    ///   - store: This device's store (its identity, its received envelopes).
    /// - Throws: `CryptoError.authenticationFailure` for a payload that is not an approval push
    ///   sealed for this device's user (or that carries no `sealed`: read the request by id);
    ///   ``SyncError`` `.untrustedAsker` for one not sealed under the newest generation this
    ///   device holds, or not by the session's desktop; `LocalStoreError` `.notFound` without
    ///   the secret.
    public static func openNotification(_ payload: Data, store: DeviceStore) async throws -> ApprovalContent {
        guard let object = (try? JSONSerialization.jsonObject(with: payload)) as? [String: Any],
            object["type"] as? String == "approval", let sealed = object["sealed"] as? String,
            let request = (object["requestId"] as? String).flatMap(UUID.parse),
            let session = (object["sessionId"] as? String).flatMap(UUID.parse),
            let requester = (object["requesterDeviceId"] as? String).flatMap(UUID.parse),
            let generation = (object["generation"] as? NSNumber).flatMap({ UInt32(exactly: $0.int64Value) }),
            let expires = (object["expiresAt"] as? NSNumber).flatMap({ UInt64(exactly: $0.int64Value) })
        else { throw CryptoError.authenticationFailure }
        guard let user = try await store.requireIdentity().userID else { throw CryptoError.authenticationFailure }
        try await checkAsker(local: store, session: session, requester: requester, generation: generation, trust: nil)
        let secret = try await store.openReceived(sessionID: session, generation: generation).secret
        let context = ApprovalRequestContext(
            userID: user, sessionID: session, requestID: request, requesterDeviceID: requester, expiresAt: expires,
            generation: generation)
        return try ApprovalCrypto.open(body: sealed, context: context, secret: secret)
    }

    /// What a notification for an opened request may show on the lock screen: the generic
    /// text the server sent, unless the device shows details (`NotificationSettings/showDetails`);
    /// then the tool and summary, each through `LockScreenText/sanitised(_:)`. The detail
    /// never reaches the lock screen.
    public static func lockScreenText(for content: ApprovalContent, showDetails: Bool) -> (title: String, body: String)
    {
        guard showDetails else { return ("Approval needed", "An agent session is waiting for you") }
        return (LockScreenText.sanitised("Approve " + content.tool + "?"), LockScreenText.sanitised(content.summary))
    }
}
