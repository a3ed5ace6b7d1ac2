import Foundation
import RemoteRules
import RemoteStore
import SyncModel
import SyncTestSupport
import Testing

/// Answers to an approval request on both remotes: the bytes the server refuses, each in the
/// words ``AnswerRules`` gives (the SQL's), and nothing of a refused answer written. The rule's
/// other refusals are the `ApprovalAnswer` vectors'; these are the checks whose inputs each
/// remote reads from the call's text itself.
@Suite("Answers to an approval request: bytes refused in the rule's words on both remotes", .serialized)
struct ApprovalAnswerRefusalTests {
    /// A decision's shape: `bytes` long, `device`'s id where a decision names the answering
    /// device, the rest `7`s.
    static func decision(_ bytes: Int, naming device: UUID) -> String {
        var raw = [UInt8](repeating: 7, count: bytes)
        raw.replaceSubrange(AnswerRules.decisionDevice, with: Array(device.canonical.utf8))
        return Data(raw).base64EncodedString()
    }

    @Test(
        "a decision or signature that is not base64, unpadded, a byte short or long, or a decision naming another device is refused as the rule says; a well-formed one decides",
        arguments: Backend.available)
    func badBytes(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let session = try await w.session
        let id = UUID()
        _ = try await w.world.remote(for: w.desktop).requestApproval(
            sessionID: session, requestID: id, requesterDeviceID: w.desktop.identity.id,
            body: Data([1, 0, 0, 0, 1] + [UInt8](repeating: 3, count: 60)).base64EncodedString(), generation: 1,
            expiresAt: UInt64(Date().timeIntervalSince1970) + 300)
        let phone = w.phone.identity.id
        let size = AnswerRules.decisionBytes
        let good = Self.decision(size, naming: phone)
        let signature = Data(repeating: 9, count: AnswerRules.signatureBytes).base64EncodedString()
        let answers: [(String, String, AnswerRules.ApprovalRefusal)] = [
            ("not base64!", signature, .notSigned),
            (String(good.dropLast()), signature, .notSigned),
            (Self.decision(size - 1, naming: phone), signature, .notSigned),
            (Self.decision(size + 1, naming: phone), signature, .notSigned),
            (good, Data(repeating: 9, count: AnswerRules.signatureBytes - 1).base64EncodedString(), .notSigned),
            (good, "not base64!", .notSigned),
            (Self.decision(size, naming: w.tablet.identity.id), signature, .otherDevice),
        ]
        let remote = try w.world.remote(for: w.phone)
        for (decision, signature, refusal) in answers {
            do {
                _ = try await remote.answerApproval(
                    requestID: id, deviceID: phone, verdict: .approve, decisionBody: decision,
                    decisionSignature: signature)
                Issue.record("\(refusal): accepted")
            } catch let error as RemoteStoreError {
                #expect((error.serverMessage ?? error.message) == refusal.message, "\(refusal): \(error)")
                #expect(error.postgrestCode?.rawValue == refusal.sqlState, "\(refusal): \(error)")
            }
        }
        #expect(try await w.world.remote().approvalRequest(id: id)?.status == .pending)
        let answered = try await remote.answerApproval(
            requestID: id, deviceID: phone, verdict: .deny, decisionBody: good, decisionSignature: signature)
        #expect(answered.accepted && answered.status == .denied && answered.decidedBy == phone)
        let row = try await w.world.remote().approvalRequest(id: id)
        #expect(row?.decisionBody == good && row?.decisionSignature == signature)
    }
}
