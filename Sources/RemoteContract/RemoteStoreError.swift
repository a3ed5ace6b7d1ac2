import Foundation

/// The one error type of SyncRemote.
///
/// Carries the HTTP status and PostgREST's `code`, `message`, `details` and `hint` when the
/// remote answered, like postgres-nio's `PSQLError`: a public ``Code`` over a private closed set,
/// and the server's own words apart. `description` holds only the status, the code and this
/// client's ``message``; the server's message (``serverMessage``: PostgreSQL quotes a value it
/// could not read there), `details` and `hint` (failing row values, which may include an envelope)
/// appear only in `debugDescription`. The embedded remote runs in this process and quotes no
/// request: its rules' refusals are its ``message``. No token is ever stored here.
public struct RemoteStoreError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What went wrong.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        // A closed set inside, an open one outside (postgres-nio's `PSQLError.Code`): a new
        // code is not a breaking change for a caller that switches over the public values.
        private enum Base: String, Sendable, Hashable {
            case http, unauthorized, network, malformedResponse, permissionDenied, conflict,
                foreignKeyViolation, rowTooLarge, configuration, storage, redirected, responseTooLarge,
                missingFunction, missingTable, invalidValue, listingDidNotEnd, limitExceeded
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// The remote answered with an error status.
        public static let http = Code(.http)
        /// The access token was refused even after one refresh.
        public static let unauthorized = Code(.unauthorized)
        /// The remote could not be reached (after retries).
        public static let network = Code(.network)
        /// The remote answered with something that is not what PostgREST sends.
        public static let malformedResponse = Code(.malformedResponse)
        /// A row was refused because it belongs to another user (row-level security).
        public static let permissionDenied = Code(.permissionDenied)
        /// A unique key would be violated.
        public static let conflict = Code(.conflict)
        /// A referenced row does not exist.
        public static let foreignKeyViolation = Code(.foreignKeyViolation)
        /// A single row is larger than a request may be.
        public static let rowTooLarge = Code(.rowTooLarge)
        /// The configuration is unusable (bad URL, missing key).
        public static let configuration = Code(.configuration)
        /// The embedded store's database failed.
        public static let storage = Code(.storage)
        /// The remote answered with a redirect; redirects are never followed (they would carry
        /// the credentials elsewhere, and a redirected write is not a written row).
        public static let redirected = Code(.redirected)
        /// A response was larger than the client accepts.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// The remote has no database function of that name taking those arguments (404 PGRST202).
        public static let missingFunction = Code(.missingFunction)
        /// The remote has no table of that name (404 `PGRST205`, or `42P01`): a deployment
        /// without a migration.
        public static let missingTable = Code(.missingTable)
        /// A value is outside what the remote allows: a CHECK (23514), an invalid argument
        /// (22023), text that is not of its type (22P02) or too long (22001).
        public static let invalidValue = Code(.invalidValue)
        /// A listing did not end: pages stopped advancing, or passed the row or time bound.
        public static let listingDidNotEnd = Code(.listingDidNotEnd)
        /// One of the remote's per-user limits (`54000`): push tokens, pending approval requests,
        /// pushes queued a minute. The server's message (``RemoteStoreError/serverMessage``; the
        /// embedded remote's ``RemoteStoreError/message``) says which and what to do.
        public static let limitExceeded = Code(.limitExceeded)
    }

    /// What went wrong.
    public var code: Code
    /// HTTP status, when there was a response.
    public var status: Int?
    /// PostgREST's or PostgreSQL's error code (`PGRST102`, `23505`).
    public var postgrestCode: PostgRESTErrorCode?
    /// This client's secret-free message: what was asked and what the code means.
    public var message: String
    /// The remote's own message (PostgREST's or Supabase Auth's), control characters escaped:
    /// only in `debugDescription`, since it may quote a value of the request. A person at a
    /// terminal may be shown it (`sync-cli` prints it under the error); a log or a report never.
    public var serverMessage: String?
    /// PostgREST's `details`: may quote row values; never in `description`.
    public var details: String?
    /// PostgREST's `hint`.
    public var hint: String?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, status: Int? = nil, postgrestCode: PostgRESTErrorCode? = nil,
        serverMessage: String? = nil, details: String? = nil, hint: String? = nil
    ) {
        self.code = code
        self.status = status
        self.postgrestCode = postgrestCode
        self.message = message
        self.serverMessage = serverMessage
        self.details = details
        self.hint = hint
    }

    /// Whether asking again later may succeed: the remote was not reached (after the client's
    /// retries), or answered that it is overloaded or failing (HTTP 429 or 5xx). A refusal, a
    /// conflict or a malformed answer is not transient.
    public var isTransient: Bool {
        if code == .network { return true }
        guard code == .http, let status else { return false }
        return status == 429 || (500...599).contains(status)
    }

    /// Whether the remote refused this device because the user's trust log revokes it (the
    /// registration's `device-revoked` refusal): it will take nothing more from this device.
    public var isDeviceRevoked: Bool { hint == "device-revoked" }

    public var description: String {
        var parts: [String] = []
        if let status { parts.append("HTTP \(status)") }
        if let postgrestCode { parts.append(postgrestCode.rawValue) }
        let prefix = parts.isEmpty ? "" : parts.joined(separator: " ") + ": "
        return prefix + message
    }

    public var debugDescription: String {
        var text = description
        if let serverMessage { text += " (the remote said: \(serverMessage))" }
        if let details { text += " (details: \(details))" }
        if let hint { text += " (hint: \(hint))" }
        return text
    }

    /// What a refusal means, in this client's words, for a message that quotes nothing the
    /// remote sent.
    package static func meaning(of code: Code, _ postgrestCode: PostgRESTErrorCode?) -> String {
        switch postgrestCode {
        case .serializationFailure?: return "the trust log moved on meanwhile; read it again"
        case .objectNotInPrerequisiteState?: return "refused in the remote's present state"
        case .invalidAuthorization?: return "refused: it needs a recent sign-in"
        case .undefinedFunction?, .functionNotFound?: return "the remote has no such function"
        case .undefinedColumn?, .columnNotFound?: return "the remote has no such column"
        case .notNullViolation?: return "a required value is missing"
        default: break
        }
        switch code {
        case .conflict: return "a unique key would be violated"
        case .foreignKeyViolation: return "a referenced row does not exist"
        case .permissionDenied: return "refused: not this user's to read or write"
        case .invalidValue: return "a value is outside what the remote allows"
        case .missingTable: return "the remote has no such table"
        case .limitExceeded: return "a per-user limit of the remote was reached"
        case .unauthorized: return "the remote refused the sign-in"
        default: return "refused"
        }
    }

    /// Whether the rows of the batch caused it (so narrowing the batch finds them), rather than
    /// the remote or the session: a 4xx other than 401/408/429, or a 500 carrying a data or
    /// integrity SQLSTATE (classes 21, 22, 23).
    package var isCausedByRows: Bool {
        guard let status else {
            return [.conflict, .foreignKeyViolation, .permissionDenied, .rowTooLarge, .invalidValue].contains(code)
        }
        if status == 500, let sqlState = postgrestCode {
            return [.cardinalityViolation, .dataException, .integrityConstraintViolation].contains(
                sqlState.sqlStateClass)
        }
        return (400..<500).contains(status) && ![401, 408, 429].contains(status)
    }
}

/// An error code as PostgREST answers it: a PostgreSQL SQLSTATE (`23505`) or one of PostgREST's
/// own (`PGRST202`). The codes this client acts on are named here, in the style of postgres-nio's
/// `PostgresError.Code`; any other code is kept as read.
public struct PostgRESTErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public var description: String { rawValue }

    /// Wraps a code as read.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A code as a server sent it, kept only when it has a code's shape (1 to 32 ASCII letters,
    /// digits and `_`: `23505`, `PGRST202`, Supabase Auth's `invalid_credentials`): the code goes
    /// into `description`, so a server cannot put text there with it.
    package init?(received text: String) {
        guard (1...32).contains(text.utf8.count),
            text.utf8.allSatisfy({
                $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            })
        else { return nil }
        rawValue = text
    }
    package init(_ rawValue: String) { self.rawValue = rawValue }

    /// The SQLSTATE's class (its first two characters, as a code `XX000`): `23505` is of class
    /// ``integrityConstraintViolation``.
    public var sqlStateClass: PostgRESTErrorCode { PostgRESTErrorCode(String(rawValue.prefix(2)) + "000") }

    // MARK: SQLSTATE classes
    /// Class 21: cardinality violation (one upsert touching a row twice is `21000`).
    public static let cardinalityViolation = PostgRESTErrorCode("21000")
    /// Class 22: data exception.
    public static let dataException = PostgRESTErrorCode("22000")
    /// Class 23: integrity constraint violation.
    public static let integrityConstraintViolation = PostgRESTErrorCode("23000")

    // MARK: SQLSTATEs
    /// `22001`: a value too long for its column.
    public static let stringDataRightTruncation = PostgRESTErrorCode("22001")
    /// `22023`: an argument outside its allowed set (the project's functions raise it).
    public static let invalidParameterValue = PostgRESTErrorCode("22023")
    /// `22P02`: text that is not of its column's type.
    public static let invalidTextRepresentation = PostgRESTErrorCode("22P02")
    /// `23502`: a required column is null.
    public static let notNullViolation = PostgRESTErrorCode("23502")
    /// `23503`: a referenced row does not exist.
    public static let foreignKeyViolation = PostgRESTErrorCode("23503")
    /// `23505`: a unique key would be violated.
    public static let uniqueViolation = PostgRESTErrorCode("23505")
    /// `23514`: a CHECK refused the row.
    public static let checkViolation = PostgRESTErrorCode("23514")
    /// `28000`: the request needs a fresh sign-in (`start_trust_log`, `request_identity_reset`).
    public static let invalidAuthorization = PostgRESTErrorCode("28000")
    /// `40001`: a trust-log append not at the head: read again and rebuild.
    public static let serializationFailure = PostgRESTErrorCode("40001")
    /// `55000`: a state refusal (an epoch pending or closed, a reset pending, the seq 9,000 reserve).
    public static let objectNotInPrerequisiteState = PostgRESTErrorCode("55000")
    /// `54000`: a per-user limit (tokens, pending approvals, pushes a minute).
    public static let programLimitExceeded = PostgRESTErrorCode("54000")
    /// `42883`: no such function (one the migration dropped, such as `reset_identity`).
    public static let undefinedFunction = PostgRESTErrorCode("42883")
    /// `42501`: row-level security or a missing privilege.
    public static let insufficientPrivilege = PostgRESTErrorCode("42501")
    /// `42703`: no such column (a read naming a column an old deployment lacks).
    public static let undefinedColumn = PostgRESTErrorCode("42703")
    /// `42P01`: no such table (older PostgREST).
    public static let undefinedTable = PostgRESTErrorCode("42P01")

    // MARK: PostgREST
    /// `PGRST202`: no function of that name taking those arguments.
    public static let functionNotFound = PostgRESTErrorCode("PGRST202")
    /// `PGRST204`: a column the request names is not in the schema cache.
    public static let columnNotFound = PostgRESTErrorCode("PGRST204")
    /// `PGRST205`: no such table in the schema cache.
    public static let tableNotFound = PostgRESTErrorCode("PGRST205")
    /// `PGRST301`: the JWT is missing, malformed or does not verify.
    public static let jwtInvalid = PostgRESTErrorCode("PGRST301")
    /// `PGRST303`: the JWT's claims are invalid (expired).
    public static let jwtClaimsInvalid = PostgRESTErrorCode("PGRST303")
}
