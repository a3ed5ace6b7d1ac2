import Foundation

/// The one error type of RemoteStore.
///
/// Carries the HTTP status and PostgREST's `code`, `message`, `details` and `hint` when the
/// remote answered, like postgres-nio's `PSQLError`. `description` holds only the status, the
/// code and the message; `details` and `hint` (PostgreSQL puts failing row values there, which
/// may include an envelope) appear only in `debugDescription`. No token is ever stored here.
public struct RemoteStoreError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What went wrong.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        public var description: String { name }

        /// The remote answered with an error status.
        public static let http = Code(name: "http")
        /// The access token was refused even after one refresh.
        public static let unauthorized = Code(name: "unauthorized")
        /// The remote could not be reached (after retries).
        public static let network = Code(name: "network")
        /// The remote answered with something that is not what PostgREST sends.
        public static let malformedResponse = Code(name: "malformedResponse")
        /// A row was refused because it belongs to another user (row-level security).
        public static let permissionDenied = Code(name: "permissionDenied")
        /// A unique key would be violated.
        public static let conflict = Code(name: "conflict")
        /// A referenced row does not exist.
        public static let foreignKeyViolation = Code(name: "foreignKeyViolation")
        /// A single row is larger than a request may be.
        public static let rowTooLarge = Code(name: "rowTooLarge")
        /// The configuration is unusable (bad URL, missing key).
        public static let configuration = Code(name: "configuration")
        /// The embedded store's database failed.
        public static let storage = Code(name: "storage")
        /// The remote answered with a redirect; redirects are never followed (they would carry
        /// the credentials elsewhere, and a redirected write is not a written row).
        public static let redirected = Code(name: "redirected")
        /// A response was larger than the client accepts.
        public static let responseTooLarge = Code(name: "responseTooLarge")
        /// The remote has no database function of that name taking those arguments (404 PGRST202).
        public static let missingFunction = Code(name: "missingFunction")
        /// The remote has no table of that name (404 `PGRST205`, or `42P01`): a deployment
        /// without a migration.
        public static let missingTable = Code(name: "missingTable")
        /// A value is outside what the remote allows: a CHECK (23514), an invalid argument
        /// (22023), text that is not of its type (22P02) or too long (22001).
        public static let invalidValue = Code(name: "invalidValue")
        /// A listing did not end: pages stopped advancing, or passed the row or time bound.
        public static let listingDidNotEnd = Code(name: "listingDidNotEnd")
    }

    public var code: Code
    /// HTTP status, when there was a response.
    public var status: Int?
    /// PostgREST's or PostgreSQL's error code (`PGRST102`, `23505`).
    public var postgrestCode: String?
    /// A secret-free message.
    public var message: String
    /// PostgREST's `details`: may quote row values; never in `description`.
    public var details: String?
    /// PostgREST's `hint`.
    public var hint: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, status: Int? = nil, postgrestCode: String? = nil, details: String? = nil, hint: String? = nil) {
        self.code = code
        self.status = status
        self.postgrestCode = postgrestCode
        self.message = message
        self.details = details
        self.hint = hint
    }

    public var description: String {
        var parts: [String] = []
        if let status { parts.append("HTTP \(status)") }
        if let postgrestCode { parts.append(postgrestCode) }
        let prefix = parts.isEmpty ? "" : parts.joined(separator: " ") + ": "
        return prefix + message
    }

    public var debugDescription: String {
        var text = description
        if let details { text += " (details: \(details))" }
        if let hint { text += " (hint: \(hint))" }
        return text
    }

    /// Whether the rows of the batch caused it (so narrowing the batch finds them), rather than
    /// the remote or the session: a 4xx other than 401/408/429, or a 500 carrying a data or
    /// integrity SQLSTATE (classes 21, 22, 23).
    var isCausedByRows: Bool {
        guard let status else {
            return [.conflict, .foreignKeyViolation, .permissionDenied, .rowTooLarge, .invalidValue].contains(code)
        }
        if status == 500, let sqlState = postgrestCode {
            return ["21", "22", "23"].contains(String(sqlState.prefix(2)))
        }
        return (400..<500).contains(status) && ![401, 408, 429].contains(status)
    }
}
