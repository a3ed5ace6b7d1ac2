import Foundation
import PostLoginSync
import RemoteRules
import RemoteStore
import SyncModel
import Testing

/// Answers to an agent's question on both remotes: the bytes the server refuses, each in the
/// words ``AnswerRules`` gives (the SQL's), and nothing of a refused answer kept. The rule's other
/// refusals are the `QuestionAnswer` vectors'; these are the checks whose inputs each remote reads
/// from the answer's text itself.
@Suite("Answers to a question: bytes refused in the rule's words on both remotes", .serialized)
struct QuestionAnswerRefusalTests {
    /// A sealed answer's shape: `bytes` long, its version byte and generation, the rest zeros.
    static func sealed(_ bytes: Int, version: UInt8 = 1, generation: UInt32) -> String {
        var raw = Data([version]) + withUnsafeBytes(of: generation.bigEndian) { Data($0) }
        raw += Data(count: bytes - raw.count)
        return raw.base64EncodedString()
    }

    @Test(
        "an answer that is not base64, unpadded, too short, too long, of another version or another generation is refused as the rule says; a sealed one is kept, alone",
        arguments: Backend.available)
    func badBytes(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let desktop = SessionAlerts(local: w.desktop.store, remote: try w.world.remote(for: w.desktop))
        let id = try await desktop.ask(session: try await w.session, text: "Which?", timeout: .seconds(600))
            .questionId
        let question = try await w.world.remote().changes(since: nil, statements: false).questions.first { $0.id == id }
        let generation = try #require(question?.generation)
        let least = AnswerRules.sealedAnswerBytes.lowerBound
        let answers: [(String, AnswerRules.Refusal)] = [
            ("not base64!", .notSealed),
            (String(Self.sealed(least, generation: generation).dropLast()), .notSealed),
            (Self.sealed(least - 1, generation: generation), .notSealed),
            (Self.sealed(AnswerRules.sealedAnswerBytes.upperBound + 1, generation: generation), .notSealed),
            (Self.sealed(least, version: 2, generation: generation), .otherHeader),
            (Self.sealed(least, generation: generation &+ 1), .otherHeader),
        ]
        let phone = try w.world.remote(for: w.phone)
        for (answer, refusal) in answers {
            do {
                _ = try await phone.answerQuestion(questionID: id, deviceID: w.phone.identity.id, answer: answer)
                Issue.record("\(refusal): accepted")
            } catch let error as RemoteStoreError {
                #expect((error.serverMessage ?? error.message) == refusal.message, "\(refusal): \(error)")
                #expect(error.postgrestCode?.rawValue == refusal.sqlState, "\(refusal): \(error)")
            }
        }
        let kept = Self.sealed(least, generation: generation)
        let answered = try await phone.answerQuestion(questionID: id, deviceID: w.phone.identity.id, answer: kept)
        #expect(answered.accepted && answered.status == .pending)
        let rows = try await w.world.remote(for: w.desktop).questionAnswers(questionID: id)
        #expect(rows.map(\.answer) == [kept] && rows.map(\.deviceID) == [w.phone.identity.id])
    }
}
