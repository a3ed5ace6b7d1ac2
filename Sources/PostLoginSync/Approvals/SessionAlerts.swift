import Foundation
import LocalStore
import Logging
import RemoteRules
import RemoteStore
import SecretCrypto
import SyncModel

/// A question as its reader sees it: the row and, opened with the session's secret, its content.
public struct OpenedQuestion: Sendable {
    public let question: AgentQuestionRow
    /// What the agent asks: a text, or multiple-choice questions (not sanitised: show it only on
    /// an unlocked screen).
    public let content: QuestionContent

    /// The question as one text: a text question's text; for choices, each question followed by
    /// its numbered options ("(several)" when more than one may be chosen).
    public var text: String {
        if let text = content.text { return text }
        return (content.choices ?? []).map { question in
            let header = question.header.isEmpty ? "" : "[\(question.header)] "
            let options = question.options.enumerated().map { "  \($0.offset + 1). \($0.element)" }
            return ([header + question.question + (question.multiSelect ? " (several)" : "")] + options)
                .joined(separator: "\n")
        }.joined(separator: "\n")
    }
}

/// What the desktop running a session raises for the person on their other devices
/// (notifications-2.md): an agent's question, sealed so the server cannot read it, and a task's
/// end, failure or pause.
///
/// A session's own transitions raise these on the remote by themselves (its runtime status from
/// running or waiting to idle, to error; its status from active to paused); ``notify(session:kind:)``
/// raises one on request, coalesced the same way: at most one task alert per session and device
/// token a minute, never the same one twice within it, and the latest state always arrives.
public struct SessionAlerts: Sendable {
    public let local: DeviceStore
    public let remote: any CompleteRemote
    let logger: Logger?

    /// Creates the alerts of this device's store over the signed-in remote.
    public init(local: DeviceStore, remote: any CompleteRemote, logger: Logger? = nil) {
        self.local = local
        self.remote = remote
        self.logger = logger
    }

    /// Raises `kind` (`.taskComplete`, `.taskFailed` or `.taskPaused`) about a session this
    /// device runs, for the user's other devices.
    ///
    /// - Returns: Device tokens queued, coalesced (the same kind within the minute), suppressed
    ///   (another device is active on the session) and off (the device's setting).
    /// - Throws: `SyncError` `.notLoggedIn`, `.userMismatch`; `RemoteStoreError`
    ///   `.invalidValue` for a kind that is not a task kind (nothing is sent), `.permissionDenied`
    ///   for a session this device does not run, `.missingFunction` on a remote without
    ///   notifications round 2.
    public func notify(session: UUID, kind: AlertKind) async throws -> SessionEventQueued {
        guard kind.isTaskKind else {
            throw RemoteStoreError(.invalidValue, "kind must be task_complete, task_failed or task_paused")
        }
        let identity = try await signedIn()
        let queued = try await remote.notifySessionEvent(
            sessionID: session, deviceID: identity.id, kind: kind)
        logger?.info("\(kind.rawValue) raised for session \(session.canonical): \(queued.queued) queued")
        return queued
    }

    /// How long a question may stand, in seconds: a minute to a day (the default an hour), the
    /// server's own rule (`RequestRules.expiryWindow(_:)` in RemoteRules).
    public static let questionTimeoutSeconds: ClosedRange<Int64> = RequestRules.expiryWindow(.question)
    /// ``questionTimeoutSeconds`` as durations.
    public static let questionTimeouts: ClosedRange<Duration> =
        .seconds(questionTimeoutSeconds.lowerBound) ... .seconds(questionTimeoutSeconds.upperBound)

    /// Asks the person a question on their other devices: sealed under the session's current
    /// secret (the server stores only ciphertext), alerted to every trusted device with a push
    /// token (never suppressed: a blocked agent must reach someone). The answer travels in the
    /// session's own channel; close the question with ``close(question:answered:)`` once it came.
    ///
    /// - Parameters:
    ///   - session: A session this desktop runs.
    ///   - text: The question: 1-2,000 Unicode scalars, no control character but `\n` and `\t`.
    ///   - timeout: How long it stands, 60 seconds to a day.
    /// - Returns: The question's id, its expiry and where its alert went.
    /// - Throws: `CryptoError.invalidApprovalContent` for text or a timeout out of limits (nothing
    ///   sent); ``SyncError`` `.wrongRole`, `.unknownSession`, `.notLoggedIn`, `.userMismatch`;
    ///   remote errors (`.missingFunction` without notifications round 2).
    public func ask(session: UUID, text: String, timeout: Duration = .seconds(3_600)) async throws -> QuestionAsked {
        guard Self.questionTimeouts.contains(timeout) else { throw CryptoError.invalidApprovalContent }
        let content = try QuestionContent(text: text)
        let center = ApprovalCenter(local: local, remote: remote, logger: logger)
        try await center.checkCanAsk(session: session)
        try await center.rotateIfRevoked(
            session: session, trust: try await TrustSnapshot.load(local: local, remote: remote))
        let identity = try await signedIn()
        let sealed = try await local.ownSealedSecret(sessionID: session)
        let secret = try await local.openOwnSecret(sessionID: session, generation: sealed.generation)
        let id = UUID()
        let expiresAt = UInt64(Date().timeIntervalSince1970) + UInt64(timeout.components.seconds)
        let context = QuestionContext(
            userID: remote.userID, sessionID: session, questionID: id, requesterDeviceID: identity.id,
            expiresAt: expiresAt, generation: sealed.generation)
        let body = ByteEncoding.base64(try QuestionCrypto.seal(content, context: context, secret: secret))
        let asked = try await remote.askQuestion(
            sessionID: session, questionID: id, requesterDeviceID: identity.id, body: body,
            generation: sealed.generation, expiresAt: expiresAt)
        logger?.info("question \(id.canonical) asked for session \(session.canonical)")
        return asked
    }

    /// Closes a question this user asked: `answered` once the agent has its answer, else
    /// cancelled. The other devices' prompts clear. A closed or expired question changes nothing
    /// (`closed` false, with its status).
    public func close(question: UUID, answered: Bool) async throws -> QuestionClosed {
        _ = try await signedIn()
        return try await remote.closeQuestion(questionID: question, status: answered ? .answered : .cancelled)
    }

    /// Reads a question and opens it with this device's copy of the session's secret (the
    /// desktop that asked, or a device the secret was sealed to, which first checks that it
    /// believes it: the newest generation it holds, asked by the session's desktop).
    ///
    /// - Throws: `RemoteStoreError` `.permissionDenied` for an id that is not one of the user's
    ///   questions (whether it exists or not); `CryptoError.authenticationFailure` for a body that
    ///   does not open for exactly this question; ``SyncError`` `.untrustedAsker` for one this
    ///   device does not believe; `LocalStoreError` `.notFound` without the secret here.
    public func open(question id: UUID) async throws -> OpenedQuestion {
        let identity = try await signedIn()
        guard let row = try await remote.agentQuestion(id: id) else {
            throw RemoteStoreError(.permissionDenied, "question \(id.canonical) is not one of yours")
        }
        guard row.userID == remote.userID else { throw CryptoError.authenticationFailure }
        let secret: SessionSecret
        if row.requesterDeviceID == identity.id {
            secret = try await local.openOwnSecret(sessionID: row.sessionID, generation: row.generation)
        } else {
            try await ApprovalCenter.checkAsker(
                local: local, session: row.sessionID, requester: row.requesterDeviceID, generation: row.generation,
                trust: try await TrustSnapshot.load(local: local, remote: remote))
            secret = try await local.openReceived(sessionID: row.sessionID, generation: row.generation).secret
        }
        let context = QuestionContext(
            userID: row.userID, sessionID: row.sessionID, questionID: row.id, requesterDeviceID: row.requesterDeviceID,
            expiresAt: row.expiresAt, generation: row.generation)
        let content = try QuestionCrypto.open(body: row.body, context: context, secret: secret)
        return OpenedQuestion(question: row, content: content)
    }

    /// The user's newest questions, newest first (for resolving an id prefix a person typed).
    ///
    /// - Throws: remote errors (`.missingFunction` without notifications round 2).
    public func recentQuestions(atMost: Int = 500) async throws -> [AgentQuestionRow] {
        try await remote.agentQuestions(atMost: atMost)
    }

    func signedIn() async throws -> DeviceIdentity {
        try await SignedInDevice.check(local, remoteUser: remote.userID).identity
    }
}
