import Foundation

/// The one error type of DeviceTrust: a pairing code, a signed statement, trust-log bytes, a
/// trust log that does not verify, an entry the server rules refuse, or an approval decision
/// that does not count. (Recovery keeps its own, deliberately vague ``RecoveryError``.)
///
/// postgres-nio's `PSQLError` shape: a public ``Code`` over a private closed set, so a new code is
/// not a breaking change. A message names what was wrong and never quotes the bytes.
public struct DeviceTrustError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case malformedCode, mistypedCode
            case notBase64, badSignature, wrongPrefix, truncated, trailingBytes, malformedIdentifier, invalidText
            case wrongUser, wrongDevice, wrongKey, textTooLong
            case malformedLogBytes, logDoesNotVerify, refusedByServerRules
            case otherRequest, otherBody, noProofOfSecret, ownRequest, outsideWindow, invalidChoice
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        // MARK: Pairing codes
        /// The pairing code is not 68 base32 characters (spaces and hyphens aside).
        public static let malformedCode = Code(.malformedCode)
        /// The pairing code's checksum does not match: a character was mistyped or two were swapped.
        public static let mistypedCode = Code(.mistypedCode)

        // MARK: Signed statements (trust.md)
        /// `body` or `signature` is not canonical standard base64.
        public static let notBase64 = Code(.notBase64)
        /// The signature is not 64 bytes, or does not verify under the key it must.
        public static let badSignature = Code(.badSignature)
        /// The body does not start with the statement's prefix and its 0x00.
        public static let wrongPrefix = Code(.wrongPrefix)
        /// The body ends before its last field.
        public static let truncated = Code(.truncated)
        /// Bytes follow the last field.
        public static let trailingBytes = Code(.trailingBytes)
        /// A UUID field is not 36 bytes of canonical lowercase hyphenated text, or a separator
        /// is not 0x00.
        public static let malformedIdentifier = Code(.malformedIdentifier)
        /// `device_type` or `device_role` is empty or not printable ASCII.
        public static let invalidText = Code(.invalidText)
        /// The statement is for another user than the one expected.
        public static let wrongUser = Code(.wrongUser)
        /// The statement is for another device than the one expected.
        public static let wrongDevice = Code(.wrongDevice)
        /// The statement's X25519 key is not the one expected.
        public static let wrongKey = Code(.wrongKey)
        /// A text field is longer than 255 bytes (it cannot be encoded).
        public static let textTooLong = Code(.textTooLong)

        // MARK: The trust log (trust-log.md)
        /// A trust-log entry, body, witness or stored row that is not well formed ("Bytes"), or
        /// that the writer or the state it would extend cannot take (a grant that does not open, a
        /// precondition of the writer).
        public static let malformedLogBytes = Code(.malformedLogBytes)
        /// An entry does not verify: ``DeviceTrustError/seq`` and ``DeviceTrustError/step`` say
        /// where and which check. The whole trust state fails closed.
        public static let logDoesNotVerify = Code(.logDoesNotVerify)
        /// The server's rules refuse an entry: ``DeviceTrustError/sqlState`` is what the server
        /// answers.
        public static let refusedByServerRules = Code(.refusedByServerRules)

        // MARK: Approval decisions (approvals.md)
        /// The decision is for another user, session or request.
        public static let otherRequest = Code(.otherRequest)
        /// The decision answers another request body than the one the desktop sealed.
        public static let otherBody = Code(.otherBody)
        /// `read` is not the desktop's: the deciding device never derived this request's key.
        public static let noProofOfSecret = Code(.noProofOfSecret)
        /// The requesting device answered its own request.
        public static let ownRequest = Code(.ownRequest)
        /// `decided_at` is outside `expires_at - 630 ... expires_at + 30`.
        public static let outsideWindow = Code(.outsideWindow)

        // MARK: Question answers (docs/agent-hooks.md)
        /// The answer's choices do not fit the question: another number of questions, no option or
        /// several for a single choice, an index past the options, or indexes not in increasing order.
        public static let invalidChoice = Code(.invalidChoice)
    }

    /// The step of the per-entry check that failed (trust-log.md, "Verification"), in the order
    /// they run.
    public enum Step: String, Sendable, Hashable, Codable, CaseIterable {
        /// The row is not a well-formed entry.
        case parse
        /// Its header: another user or epoch, a seq or previous hash that does not follow, or a
        /// type not allowed there (a second genesis, the seq 9,000 reserve, a closed epoch).
        case header
        /// Its append proof does not continue the chain.
        case proof
        /// A signature does not verify under the key in force.
        case signature
        /// It was created before the entry before it.
        case time
        /// Its author may not write it.
        case author
        /// The state it would extend cannot take it (a burned id or key, a tenth root, a revoked
        /// root).
        case state
    }

    /// What went wrong.
    public let code: Code
    /// What exactly, without any bytes of the input.
    public let message: String
    /// ``Code/logDoesNotVerify``: the position the entry was expected at (never the row's own seq).
    public let seq: UInt64?
    /// ``Code/logDoesNotVerify``: the step that failed.
    public let step: Step?
    /// ``Code/refusedByServerRules``: the SQLSTATE the server answers (`22023`, `40001`, ...).
    public let sqlState: String?

    /// Creates an error of `code`.
    public init(_ code: Code, _ message: String) {
        self.init(code, message, seq: nil, step: nil, sqlState: nil)
    }

    private init(_ code: Code, _ message: String, seq: UInt64?, step: Step?, sqlState: String?) {
        self.code = code
        self.message = message
        self.seq = seq
        self.step = step
        self.sqlState = sqlState
    }

    /// An entry that does not verify at `seq`, in `step`.
    public static func logDoesNotVerify(seq: UInt64, step: Step, _ message: String) -> DeviceTrustError {
        DeviceTrustError(.logDoesNotVerify, message, seq: seq, step: step, sqlState: nil)
    }

    /// An entry the server's rules refuse, with the SQLSTATE the server answers.
    public static func refused(_ sqlState: String, _ message: String) -> DeviceTrustError {
        DeviceTrustError(.refusedByServerRules, message, seq: nil, step: nil, sqlState: sqlState)
    }

    /// The message, with the position and step of a log that does not verify, or the SQLSTATE of
    /// a server-rule refusal.
    public var description: String {
        if let seq, let step { return "the trust log does not verify at seq \(seq) (\(step.rawValue)): \(message)" }
        if let sqlState { return "\(sqlState): \(message)" }
        return message
    }
}
