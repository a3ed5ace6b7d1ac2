import DeviceTrust
import Foundation
import SecretCrypto

// The layouts and checks of the agent-hooks files: multiple-choice questions and their signed,
// sealed answers (question-choices-v1.json), and the session ids agents' sessions get
// (agent-session-v1.json).

/// `UNBOUND-QUESTION-CHOICES-V1` (docs/agent-hooks.md, "Questions with choices"): groups of `type`
/// `ChoicesOpen` (open a question body whose plaintext holds choices: valid yields exactly
/// `questions`, invalid is refused) or `AnswerAccept` (open a sealed answer for `deviceId`, verify
/// its signature under `signingPublicKey` and accept it against the question as the asking desktop
/// does: valid yields exactly `choices` and `answeredAt`, invalid is refused).
public struct QuestionChoicesGroup: VectorGroup {
    /// Which check the group's tests take.
    public enum Kind: String, Decodable, Sendable {
        case choicesOpen = "ChoicesOpen"
        case answerAccept = "AnswerAccept"
    }

    public let type: Kind
    public let tests: [Test]

    /// One question as the file writes it.
    public struct Choice: Codable, Sendable, Hashable {
        public let question: String
        public let header: String
        public let options: [String]
        public let multiSelect: Bool

        /// Creates a question as the file writes it.
        public init(question: String, header: String, options: [String], multiSelect: Bool) {
            self.question = question
            self.header = header
            self.options = options
            self.multiSelect = multiSelect
        }
    }

    /// A question body, or an answer to one.
    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        public let sessionSecret: String
        public let userId: String
        public let sessionId: String
        public let questionId: String
        public let requesterDeviceId: String
        public let expiresAt: UInt64
        public let generation: UInt32
        /// The question body, standard base64 as stored.
        public let body: String
        /// ChoicesOpen, valid: what opens; AnswerAccept: the question answered.
        public let questions: [Choice]?
        /// ChoicesOpen intermediates (hex): `K`, the AAD, the nonce.
        public let key: HexBytes?
        public let aad: HexBytes?
        public let nonce: HexBytes?
        /// AnswerAccept: the answering device, its key (base64), the sealed answer (base64).
        public let deviceId: String?
        public let signingPublicKey: String?
        public let answer: String?
        /// AnswerAccept, valid: what it yields.
        public let choices: [[Int]]?
        public let answeredAt: UInt64?
        /// AnswerAccept intermediates (hex): `K_a`, the AAD, the nonce, the signed statement, the
        /// signing seed (to re-sign and re-seal byte for byte).
        public let answerKey: HexBytes?
        public let answerAad: HexBytes?
        public let answerNonce: HexBytes?
        public let statement: HexBytes?
        public let signingPrivateKey: HexBytes?
    }
}

/// `UNBOUND-AGENT-SESSION-V1` (docs/agent-hooks.md, "Session identity"): groups of `type`
/// `NameBasedUuid` (`uuid` is UUIDv5(`namespace`, UTF-8 `name`)) or `AgentSessionId` (`sessionId` is
/// the session an agent's session gets: UUIDv5 of the spec's namespace and
/// `<desktopDeviceId>:<agent>:<agentSessionId>`); invalid: the given id is not it.
public struct AgentSessionGroup: VectorGroup {
    public enum Kind: String, Decodable, Sendable {
        case nameBasedUUID = "NameBasedUuid"
        case agentSessionID = "AgentSessionId"
    }

    public let type: Kind
    public let tests: [Test]

    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        public let namespace: String?
        public let name: String?
        public let uuid: String?
        public let desktopDeviceId: String?
        public let agent: String?
        public let agentSessionId: String?
        public let sessionId: String?
    }

    /// The namespace of agents' sessions (docs/agent-hooks.md).
    public static let agentNamespace = UUID(uuidString: "8e1c1c84-6d2b-5c3a-9a65-1f3f6a7b0c11")!

    /// `nil` when the test passed, else why not.
    static func check(_ kind: Kind, _ test: Test) -> String? {
        let outcome: Bool?
        switch kind {
        case .nameBasedUUID:
            guard let namespace = test.namespace.flatMap(UUID.init(uuidString:)), let name = test.name,
                let expected = test.uuid.flatMap(UUID.init(uuidString:))
            else { return "fields: missing or malformed" }
            outcome = NameBasedUUID.v5(namespace: namespace, name: Array(name.utf8)) == expected
        case .agentSessionID:
            guard let desktop = test.desktopDeviceId, let agent = test.agent, let session = test.agentSessionId,
                let expected = test.sessionId.flatMap(UUID.init(uuidString:))
            else { return "fields: missing or malformed" }
            outcome =
                NameBasedUUID.v5(namespace: agentNamespace, name: Array("\(desktop):\(agent):\(session)".utf8))
                == expected
        }
        return VectorVerifier.judge(test.result, outcome)
    }
}

extension VectorVerifier {
    static func checkChoices(_ kind: QuestionChoicesGroup.Kind, _ test: QuestionChoicesGroup.Test) -> String? {
        guard let user = UUID(uuidString: test.userId), let session = UUID(uuidString: test.sessionId),
            let question = UUID(uuidString: test.questionId),
            let requester = UUID(uuidString: test.requesterDeviceId),
            let secret = try? SessionSecret(textForm: test.sessionSecret)
        else { return judge(test.result, nil).map { "fields: " + $0 } }
        let context = QuestionContext(
            userID: user, sessionID: session, questionID: question, requesterDeviceID: requester,
            expiresAt: test.expiresAt, generation: test.generation)
        let opened = try? QuestionCrypto.open(body: test.body, context: context, secret: secret)
        let choices = opened?.choices?.map {
            QuestionChoicesGroup.Choice(
                question: $0.question, header: $0.header, options: $0.options, multiSelect: $0.multiSelect)
        }
        guard kind == .answerAccept else {
            if let reason = judge(test.result, choices.map { $0 == test.questions }) { return "open: " + reason }
            guard test.result == .valid, let content = opened else { return nil }
            if let key = test.key,
                (try? QuestionCrypto.key(secret: secret, questionID: question, generation: test.generation))?
                    .withUnsafeBytes({ Array($0) }) != key.bytes
            {
                return "key: differs"
            }
            if let aad = test.aad, context.aad != aad.bytes { return "aad: differs" }
            if let nonce = test.nonce {
                guard
                    let sealed = try? QuestionCrypto.seal(
                        content, context: context, secret: secret, nonce: nonce.bytes),
                    ByteEncoding.base64(sealed) == test.body
                else { return "re-seal: differs" }
            }
            return nil
        }
        guard let questions = opened?.choices, let body = try? ByteEncoding.bytes(base64: test.body) else {
            return "question: does not open as choices"
        }
        return checkAnswer(test, context: context, secret: secret, questions: questions, body: body)
    }

    static func checkAnswer(
        _ test: QuestionChoicesGroup.Test, context: QuestionContext, secret: SessionSecret, questions: [ChoiceQuestion],
        body: [UInt8]
    ) -> String? {
        let device = test.deviceId.flatMap(UUID.init(uuidString:))
        let answerContext = device.map {
            QuestionAnswerContext(
                userID: context.userID, sessionID: context.sessionID, questionID: context.questionID, deviceID: $0,
                generation: context.generation)
        }
        let accepted: QuestionAnswer? = {
            guard let device, let answerContext, let text = test.answer,
                let key = test.signingPublicKey.flatMap(keyBytes).flatMap({
                    try? Ed25519PublicKey(rawRepresentation: $0)
                }),
                let plaintext = try? QuestionAnswerCrypto.open(body: text, context: answerContext, secret: secret)
            else { return nil }
            return try? QuestionAnswer.accept(
                plaintext, signingKey: key,
                expecting: QuestionAnswer.Expectation(
                    userID: context.userID, sessionID: context.sessionID, questionID: context.questionID,
                    requesterDeviceID: context.requesterDeviceID, deviceID: device, expiresAt: context.expiresAt,
                    body: body, questions: questions))
        }()
        let outcome = accepted.map { $0.choices == test.choices && $0.answeredAt == test.answeredAt }
        if let reason = judge(test.result, outcome) { return "accept: " + reason }
        guard test.result == .valid, let accepted, let answerContext else { return nil }
        if let key = test.answerKey,
            (try? QuestionAnswerCrypto.key(
                secret: secret, questionID: context.questionID, generation: context.generation))?
                .withUnsafeBytes({ Array($0) }) != key.bytes
        {
            return "answer key: differs"
        }
        if let aad = test.answerAad, answerContext.aad != aad.bytes { return "answer aad: differs" }
        if let statement = test.statement, (try? accepted.body()) != statement.bytes { return "statement: differs" }
        if let seed = test.signingPrivateKey, let nonce = test.answerNonce,
            CryptoBackend.current.signsDeterministically
        {
            guard let signer = try? Ed25519PrivateKey(seed: SecureBytes(copying: seed.bytes)),
                let plaintext = try? accepted.signed(by: signer),
                let sealed = try? QuestionAnswerCrypto.seal(
                    plaintext, context: answerContext, secret: secret, nonce: nonce.bytes),
                ByteEncoding.base64(sealed) == test.answer
            else { return "re-sign and re-seal: differs" }
        }
        return nil
    }
}
