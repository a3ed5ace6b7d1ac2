import AgentHooks
import DeviceTrust
import Foundation
import SecretCrypto

// The parsers agent hooks added: a question's plaintext, a signed answer, a hook's input.
extension FuzzTarget {
    static func questionContent(_ data: [UInt8]) -> FuzzOutcome {
        do {
            let content = try QuestionContent.decode(data)
            // Choices are read only in their canonical form: what is accepted re-encodes to itself.
            if content.choices != nil, QuestionContent.encode(content) != data {
                violated(.questionContent, "accepted choices do not re-encode to the same bytes")
            }
            guard (try? QuestionContent.decode(QuestionContent.encode(content))) == content else {
                violated(.questionContent, "an accepted plaintext does not round-trip through its canonical form")
            }
            return .accepted
        } catch CryptoError.authenticationFailure {
            return .rejected
        } catch {
            violated(.questionContent, "an untyped error")
        }
    }

    static func questionAnswer(_ data: [UInt8]) -> FuzzOutcome {
        do {
            let answer = try QuestionAnswer.parseSigned(data)
            guard (try? answer.body()) == Array(data.dropLast(64)) else {
                violated(.questionAnswer, "an accepted statement does not re-encode to the same bytes")
            }
            return .accepted
        } catch {
            return .rejected
        }
    }

    static func hookInput(_ data: [UInt8]) -> FuzzOutcome {
        do {
            let event = try ClaudeCodeEvents.parse(data)
            guard !event.agentSession.isEmpty, event.agentSession.unicodeScalars.count <= 256 else {
                violated(.hookInput, "an accepted input has no usable session id")
            }
            // What the phone would be shown always fits a request or is nil, never a crash.
            if case .permissionRequest(let tool, let input) = event.kind,
                let prompt = ToolPrompt.make(toolName: tool, input: input, allowTruncated: true)
            {
                guard (try? prompt.content()) != nil else { violated(.hookInput, "a prompt that does not fit") }
            }
            return .accepted
        } catch {
            return .rejected
        }
    }
}
