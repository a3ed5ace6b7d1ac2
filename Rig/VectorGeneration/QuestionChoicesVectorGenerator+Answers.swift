import ConformanceVectors
import DeviceTrust
import Foundation
import SecretCrypto
import SyncModel

extension QuestionChoicesVectorGenerator.Builder {
    /// Answers: the valid ones with their intermediates, then each refusal the asking desktop makes.
    mutating func answerCases() throws -> [QuestionChoicesVectorGenerator.OutputTest] {
        var tests: [QuestionChoicesVectorGenerator.OutputTest] = []
        func add(
            _ made: (QuestionChoicesVectorGenerator.OutputTest, [UInt8]), _ comment: String, _ flags: [String],
            valid: Bool
        ) {
            var test = made.0
            test.comment = comment
            test.flags = flags
            test.result = valid ? "valid" : "invalid"
            if valid {
                test.statement = hex(made.1)
                test.signingPrivateKey = hex(signer.seedRepresentation.withUnsafeBytes { Array($0) })
                test.answerKey = hex(
                    (try? QuestionAnswerCrypto.key(
                        secret: secret, questionID: context.questionID, generation: context.generation))?
                        .withUnsafeBytes { Array($0) } ?? [])
                test.answerAad = hex(
                    QuestionAnswerContext(
                        userID: context.userID, sessionID: context.sessionID, questionID: context.questionID,
                        deviceID: device, generation: context.generation
                    ).aad)
            }
            tests.append(test)
        }
        add(try answer([[1], [0, 2]], label: "valid"), "Vue; unit tests and type check", ["Normal"], valid: true)
        add(
            try answer([[0], [3]], label: "valid-2"), "React; the last option of the second question", ["Normal"],
            valid: true)
        add(
            try answer([[2], [0, 1, 2, 3]], label: "all"), "every option of the multiple-choice question", ["EdgeCase"],
            valid: true)
        add(
            try answer(
                [[1], [0, 2]], sealedFor: UUID(uuidString: "11111111-2222-4333-8444-555555555555")!,
                label: "other-device"),
            "sealed for another device id than its row names (the AEAD binds the device)", ["Tampered"], valid: false)
        add(
            try answer(
                [[1], [0, 2]], signer: try Ed25519PrivateKey(seed: Self.seed.derive("other signer", 32)),
                label: "other-key"),
            "signed by another key than the device's", ["BadSignature"], valid: false)
        add(
            try answer([[1], [0, 2]], mutate: { $0.bodyHash = SHA256.hash([0x00]) }, label: "other-body"),
            "about another question body", ["OtherBody"], valid: false)
        add(
            try answer(
                [[1], [0, 2]], mutate: { $0.questionID = UUID(uuidString: "22222222-3333-4444-8555-666666666666")! },
                label: "other-question"),
            "names another question", ["OtherRequest"], valid: false)
        add(
            try answer([[0, 1], [0]], label: "two-on-single"), "two options for a single-choice question",
            ["InvalidChoice"], valid: false)
        add(
            try answer([[3], [0]], label: "out-of-range"), "an option past the question's three", ["InvalidChoice"],
            valid: false)
        add(try answer([[1]], label: "one-of-two"), "one answer for two questions", ["InvalidChoice"], valid: false)
        add(
            try answer([[1], [0, 2]], answeredAt: 1_795_003_631, label: "late"),
            "answered 31 s after the question expired", ["OutsideWindow"], valid: false)
        add(
            try answer([[1], [0, 2]], by: context.requesterDeviceID, label: "own"), "answered by the asking device",
            ["OwnRequest"], valid: false)
        add(
            try answer(
                [[1], [0, 2]],
                rawStatement: { bytes in
                    var bytes = bytes
                    // The last two indexes, written decreasing.
                    bytes.swapAt(bytes.count - 1, bytes.count - 2)
                    return bytes
                }, label: "decreasing"), "indexes not in increasing order", ["InvalidChoice"], valid: false)
        add(
            try answer([[1], [0, 2]], rawStatement: { $0 + [0x00] }, label: "trailing"), "a byte after the last index",
            ["TrailingBytes"], valid: false)
        add(
            try answer(
                [[1], [0, 2]],
                rawStatement: { bytes in
                    var bytes = bytes
                    bytes[QuestionAnswer.prefix.utf8.count - 1] = UInt8(ascii: "2")
                    return bytes
                }, label: "prefix"), "another prefix (unbound-question-answer-v2)", ["WrongPrefix"], valid: false)
        return tests
    }
}
