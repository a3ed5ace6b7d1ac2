import Foundation

/// One multiple-choice question (docs/agent-hooks.md, "Questions with choices"), as an agent's
/// `AskUserQuestion` asks it: the question, a short header, the options' labels, and whether
/// several may be chosen.
///
/// Limits: `question` 1-1,000 Unicode scalars (no control character but `\n` and `\t`); `header`
/// 0-64 scalars and `options` 1-8 labels of 1-200 scalars each, distinct, no control character.
public struct ChoiceQuestion: Sendable, Hashable {
    public let question: String
    public let header: String
    public let options: [String]
    public let multiSelect: Bool

    /// The most options a question may have (an answer's index is below it).
    public static let maxOptions = 8

    /// Checks the limits.
    ///
    /// - Throws: ``CryptoError/invalidApprovalContent`` for a field out of its limits or two
    ///   options with the same label.
    public init(question: String, header: String, options: [String], multiSelect: Bool) throws {
        guard ApprovalContent.isValid(question, maxScalars: 1_000, minScalars: 1, allowsLines: true),
            ApprovalContent.isValid(header, maxScalars: 64, minScalars: 0, allowsLines: false),
            (1...Self.maxOptions).contains(options.count), Set(options).count == options.count,
            options.allSatisfy({ ApprovalContent.isValid($0, maxScalars: 200, minScalars: 1, allowsLines: false) })
        else { throw CryptoError.invalidApprovalContent }
        self.question = question
        self.header = header
        self.options = options
        self.multiSelect = multiSelect
    }

    /// What the choices' JSON starts with (and a text question's never does).
    static let opening = "{\"questions\":["

    /// The canonical JSON of the questions.
    static func encode(_ questions: [ChoiceQuestion]) -> [UInt8] {
        var out = Array(opening.utf8)
        for (index, question) in questions.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += Array("{\"question\":".utf8)
            ApprovalContent.string(question.question, into: &out)
            out += Array(",\"header\":".utf8)
            ApprovalContent.string(question.header, into: &out)
            out += Array(",\"options\":[".utf8)
            for (position, label) in question.options.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                ApprovalContent.string(label, into: &out)
            }
            out += Array("],\"multiSelect\":\(question.multiSelect)}".utf8)
        }
        out += Array("]}".utf8)
        return out
    }

    /// Reads exactly the canonical form: the bytes must be what `encode(_:)` writes for the
    /// questions they hold (so no white space, no other escape, nothing reordered or repeated).
    static func decode(_ bytes: [UInt8]) throws -> QuestionContent {
        var reader = StrictJSONObjectReader(bytes)
        func literal(_ text: String) throws {
            for byte in text.utf8 { try reader.expect(byte) }
        }
        var questions: [ChoiceQuestion] = []
        try literal(opening)
        repeat {
            if !questions.isEmpty { try literal(",") }
            try literal("{\"question\":")
            let question = try reader.string()
            try literal(",\"header\":")
            let header = try reader.string()
            try literal(",\"options\":[")
            var options = [try reader.string()]
            while reader.peek() == UInt8(ascii: ",") {
                try literal(",")
                options.append(try reader.string())
            }
            try literal("],\"multiSelect\":")
            let multiSelect: Bool
            if reader.peek() == UInt8(ascii: "t") {
                try literal("true")
                multiSelect = true
            } else {
                try literal("false")
                multiSelect = false
            }
            try literal("}")
            guard
                let parsed = try? ChoiceQuestion(
                    question: question, header: header, options: options, multiSelect: multiSelect)
            else { throw CryptoError.authenticationFailure }
            questions.append(parsed)
        } while reader.peek() == UInt8(ascii: ",")
        try literal("]}")
        guard reader.index == bytes.count, let content = try? QuestionContent(choices: questions),
            QuestionContent.encode(content) == bytes
        else { throw CryptoError.authenticationFailure }
        return content
    }
}
