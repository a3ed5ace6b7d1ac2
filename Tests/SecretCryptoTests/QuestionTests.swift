import Foundation
import SecretCrypto
import Testing

/// An agent's sealed question (notifications-2.md, "Questions, sealed"): it opens only as a
/// question, for exactly its fields, and never as an approval, nor an approval as it.
@Suite("Sealed questions")
struct QuestionTests {
    let secret = SessionSecret()
    let context = QuestionContext(
        userID: UUID(), sessionID: UUID(), questionID: UUID(), requesterDeviceID: UUID(), expiresAt: 1_795_003_600,
        generation: 3)

    var approvalContext: ApprovalRequestContext {
        ApprovalRequestContext(
            userID: context.userID, sessionID: context.sessionID, requestID: context.questionID,
            requesterDeviceID: context.requesterDeviceID, expiresAt: context.expiresAt, generation: context.generation)
    }

    @Test("a question opens for its fields and its secret, and for nothing else")
    func roundTrip() throws {
        let content = try QuestionContent(text: "Run the migration?\n\tyes / no \u{1F600}")
        let body = ByteEncoding.base64(try QuestionCrypto.seal(content, context: context, secret: secret))
        #expect(try QuestionCrypto.open(body: body, context: context, secret: secret) == content)
        #expect(QuestionCrypto.generation(ofBody: body) == 3)
        var other = context
        other.questionID = UUID()
        #expect(throws: CryptoError.authenticationFailure) {
            try QuestionCrypto.open(body: body, context: other, secret: secret)
        }
        #expect(throws: CryptoError.authenticationFailure) {
            try QuestionCrypto.open(body: body, context: context, secret: SessionSecret())
        }
        #expect(!content.description.contains("migration"))
    }

    @Test("an approval's body never opens as a question, nor a question's as an approval")
    func neitherOpensAsTheOther() throws {
        let approval = ByteEncoding.base64(
            try ApprovalCrypto.seal(
                ApprovalContent(tool: "Bash", summary: "npm test"), context: approvalContext, secret: secret))
        #expect(throws: CryptoError.authenticationFailure) {
            try QuestionCrypto.open(body: approval, context: context, secret: secret)
        }
        let question = ByteEncoding.base64(
            try QuestionCrypto.seal(QuestionContent(text: "Go?"), context: context, secret: secret))
        #expect(throws: CryptoError.authenticationFailure) {
            try ApprovalCrypto.open(body: question, context: approvalContext, secret: secret)
        }
    }

    @Test(
        "the text's limits",
        arguments: [
            ("", false), ("?", true), (String(repeating: "q", count: 2_000), true),
            (String(repeating: "q", count: 2_001), false), ("a\rb", false), ("a\u{7F}", false), ("a\u{85}", false),
            ("a\nb\tc", true), (String(repeating: "\u{1F600}", count: 1_100), false),
        ])
    func limits(text: String, accepted: Bool) {
        #expect(((try? QuestionContent(text: text)) != nil) == accepted)
    }
}
