import DeviceTrust
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel

/// How a multiple-choice question ended, as the asking desktop verified it.
public enum QuestionOutcome: Sendable, Hashable {
    /// A certified device that held the session's secret chose these options (one list of
    /// option indexes per question, in order).
    case answered(by: UUID, choices: [[Int]])
    /// Nobody answered in time (or only with answers that did not verify).
    case expired
    /// The question was cancelled (closed without an answer).
    case cancelled
}

/// An answer the asking desktop refused: it does not open under the session secret for its
/// device, does not verify under that device's certified key, answers another question or body,
/// comes from a revoked or uncertified device, or chooses what the question does not offer.
public struct QuestionAnswerRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    public var questionID: UUID
    /// The device the answer's row names.
    public var deviceID: UUID
    /// Why, without the answer's content.
    public var reason: String

    public var description: String { "answer to question \(questionID.canonical) refused: \(reason)" }
}

/// A multiple-choice question as the asking desktop sent it: what its answers are checked against.
struct SentQuestion: Sendable {
    let row: AgentQuestionRow
    let questions: [ChoiceQuestion]
}

extension SessionAlerts {
    /// Asks multiple-choice questions on the person's other devices (docs/agent-hooks.md,
    /// "Questions with choices") and waits for a verified answer, the question's end, or
    /// cancellation.
    ///
    /// The questions are sealed under the session's current secret; an answer is the answering
    /// device's signed choice, sealed under the same secret, and counts only once this desktop
    /// opened it, verified its signature under the device's certificate (certified and not revoked
    /// at the trust-log position it answered from) and checked it against its own copy of the
    /// question. The first answer that holds is taken and the question closed (`answered`), which
    /// clears the prompt on the other devices. Cancelling the task closes it `cancelled`.
    ///
    /// - Parameters:
    ///   - session: A session this desktop runs.
    ///   - choices: One to four questions.
    ///   - timeout: How long the question stands, 60 seconds to a day.
    ///   - pollInterval: Time between reads of the question and its answers.
    ///   - onRefused: Told of each answer that did not verify (once per answer).
    ///   - onAsk: Told the question's id just before it is sent; nothing is sent when it throws.
    /// - Returns: The outcome.
    /// - Throws: `CryptoError.invalidApprovalContent` for questions out of limits; ``SyncError``
    ///   `.noIdentity` without a pinned identity, `.wrongRole`, `.unknownSession`; remote errors
    ///   and `CancellationError` (after closing the question).
    public func ask(
        session: UUID, choices: [ChoiceQuestion], timeout: Duration = .seconds(3_600),
        pollInterval: Duration = .seconds(1), onRefused: (@Sendable (QuestionAnswerRefusal) -> Void)? = nil,
        onAsk: (@Sendable (AskedRequest) async throws -> Void)? = nil
    ) async throws -> QuestionOutcome {
        guard Self.questionTimeouts.contains(timeout) else { throw CryptoError.invalidApprovalContent }
        let content = try QuestionContent(choices: choices)
        let center = ApprovalCenter(local: local, remote: remote, logger: logger)
        try await center.checkCanAsk(session: session)
        try await center.rotateIfRevoked(session: session, trust: try await center.trust())
        let identity = try await signedIn()
        let sealed = try await local.ownSealedSecret(sessionID: session)
        let secret = try await local.openOwnSecret(sessionID: session, generation: sealed.generation)
        let id = UUID()
        let expiresAt = UInt64(Date().timeIntervalSince1970) + UInt64(timeout.components.seconds)
        let context = QuestionContext(
            userID: remote.userID, sessionID: session, questionID: id, requesterDeviceID: identity.id,
            expiresAt: expiresAt, generation: sealed.generation)
        let body = ByteEncoding.base64(try QuestionCrypto.seal(content, context: context, secret: secret))
        try await onAsk?(AskedRequest(requestID: id, sessionID: session, control: nil, expiresAt: expiresAt))
        _ = try await remote.askQuestion(
            sessionID: session, questionID: id, requesterDeviceID: identity.id, body: body,
            generation: sealed.generation, expiresAt: expiresAt)
        logger?.info("question \(id.canonical) with choices asked for session \(session.canonical)")
        let sent = SentQuestion(
            row: AgentQuestionRow(
                id: id, userID: remote.userID, sessionID: session, requesterDeviceID: identity.id, body: body,
                generation: sealed.generation, expiresAt: expiresAt),
            questions: choices)
        do {
            let outcome = try await waitForAnswer(
                sent, secret: secret, center: center, pollInterval: pollInterval, onRefused: onRefused)
            if case .answered = outcome { _ = try? await remote.closeQuestion(questionID: id, status: .answered) }
            return outcome
        } catch {
            // Cancelled, or the wait failed (a remote error, a log that forked): the question
            // is closed so no device keeps a prompt nobody waits for.
            _ = await uncancelled { try? await remote.closeQuestion(questionID: id, status: .cancelled) }
            throw error
        }
    }

    /// Polls the question and its answers until an answer verifies or the question ends.
    func waitForAnswer(
        _ sent: SentQuestion, secret: SessionSecret, center: ApprovalCenter, pollInterval: Duration,
        onRefused: (@Sendable (QuestionAnswerRefusal) -> Void)?
    ) async throws -> QuestionOutcome {
        var judged = Set<String>()
        while true {
            try Task.checkCancellation()
            for answer in try await remote.questionAnswers(questionID: sent.row.id)
            where judged.insert(answer.deviceID.canonical + answer.answer).inserted {
                switch try await verify(answer, against: sent, secret: secret, center: center) {
                case .success(let choices): return .answered(by: answer.deviceID, choices: choices)
                case .failure(let refusal):
                    logger?.warning("\(refusal)")
                    onRefused?(refusal)
                }
            }
            if let row = try await remote.agentQuestion(id: sent.row.id) {
                switch row.status(at: Date()) {
                case .pending, .answered: break
                case .expired: return .expired
                case .cancelled: return .cancelled
                }
            }
            if UInt64(Date().timeIntervalSince1970) >= sent.row.expiresAt + 30 { return .expired }
            try await Task.sleep(for: pollInterval)
        }
    }

    /// Whether an answer row holds: it opens for its device, its signature verifies under that
    /// device's certified key, it answers this very question and body, and its device was
    /// certified at the trust-log position it answered from.
    func verify(
        _ answer: QuestionAnswerRow, against sent: SentQuestion, secret: SessionSecret, center: ApprovalCenter
    ) async throws -> Result<[[Int]], QuestionAnswerRefusal> {
        func refuse(_ reason: String) -> Result<[[Int]], QuestionAnswerRefusal> {
            .failure(QuestionAnswerRefusal(questionID: sent.row.id, deviceID: answer.deviceID, reason: reason))
        }
        let context = QuestionAnswerContext(
            userID: sent.row.userID, sessionID: sent.row.sessionID, questionID: sent.row.id,
            deviceID: answer.deviceID, generation: sent.row.generation)
        guard answer.userID == sent.row.userID, answer.questionID == sent.row.id,
            let plaintext = try? QuestionAnswerCrypto.open(body: answer.answer, context: context, secret: secret)
        else { return refuse("the answer does not open for its device under the session's secret") }
        let trust = try await center.trust()
        let certificate: DeviceCertificate
        switch ApprovalCenter.signer(answer.deviceID, in: trust) {
        case .certified(let found): certificate = found
        case .refused(let reason): return refuse(reason)
        }
        guard let body = try? ByteEncoding.bytes(base64: sent.row.body) else {
            return refuse("this device's copy of the question is unreadable")
        }
        let accepted: QuestionAnswer
        do {
            accepted = try QuestionAnswer.accept(
                plaintext, signingKey: certificate.ed25519PublicKey,
                expecting: QuestionAnswer.Expectation(
                    userID: sent.row.userID, sessionID: sent.row.sessionID, questionID: sent.row.id,
                    requesterDeviceID: sent.row.requesterDeviceID, deviceID: answer.deviceID,
                    expiresAt: sent.row.expiresAt, body: body, questions: sent.questions))
        } catch {
            return refuse(error.description)
        }
        if let reason = try await center.checkHead(accepted.logHead, of: answer.deviceID, trust: trust) {
            return refuse(reason)
        }
        return .success(accepted.choices)
    }

    /// Answers a multiple-choice question this device opened (a phone, a tablet): the choice is
    /// signed with this device's signing key, over the question's exact body and this device's
    /// pinned trust-log head, and sealed under the session secret for this device.
    ///
    /// - Parameters:
    ///   - opened: The question, as ``open(question:)`` returned it.
    ///   - choices: For each question in order, the chosen option indexes (one for a
    ///     single-choice question).
    ///   - now: When it was answered (signed into the answer).
    /// - Returns: Whether the remote recorded it.
    /// - Throws: `DeviceTrustError` `.invalidChoice` for choices the question does not offer
    ///   (nothing is sent); ``SyncError`` `.trustLogMissing` without a verified trust log,
    ///   `.wrongRole` for a question this device asked; remote errors.
    public func answer(
        _ opened: OpenedQuestion, choices: [[Int]], now: Date = Date()
    ) async throws
        -> QuestionAnswered
    {
        let row = opened.question
        let identity = try await signedIn()
        guard row.requesterDeviceID != identity.id else {
            throw SyncError(code: .wrongRole, message: "this device asked this question: answer it on another device")
        }
        guard let questions = opened.content.choices, choices.count == questions.count,
            zip(choices, questions).allSatisfy({ indexes, question in
                !indexes.isEmpty && (question.multiSelect || indexes.count == 1)
                    && indexes.allSatisfy { (0..<question.options.count).contains($0) }
            })
        else { throw DeviceTrustError(.invalidChoice, "the choices do not fit the question's options") }
        guard let head = try await ApprovalCenter(local: local, remote: remote).trust().head else {
            throw SyncError(
                code: .trustLogMissing,
                message: "answering needs the user's trust log verified here (an answer carries its head)")
        }
        let statement = QuestionAnswer(
            userID: row.userID, sessionID: row.sessionID, questionID: row.id, deviceID: identity.id,
            bodyHash: SHA256.hash(try ByteEncoding.bytes(base64: row.body)),
            answeredAt: UInt64(max(0, now.timeIntervalSince1970)),
            logHead: ApprovalDecision.LogHead(epoch: head.epoch, seq: head.seq, hash: head.hash),
            choices: choices.map { Array(Set($0)).sorted() })
        let secret = try await local.openReceived(sessionID: row.sessionID, generation: row.generation).secret
        let sealed = try QuestionAnswerCrypto.seal(
            try statement.signed(by: try await local.signingKey()),
            context: QuestionAnswerContext(
                userID: row.userID, sessionID: row.sessionID, questionID: row.id, deviceID: identity.id,
                generation: row.generation), secret: secret)
        return try await self.remote.answerQuestion(
            questionID: row.id, deviceID: identity.id, answer: ByteEncoding.base64(sealed))
    }
}
