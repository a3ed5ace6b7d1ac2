import Foundation

/// The kinds of alert a device receives (notifications-2.md, "Alert kinds"): the raw value is
/// the payload's `type`.
public enum AlertKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// An agent asks before it runs a tool (approvals.md).
    case approval
    /// An agent asks the person a question.
    case question
    /// A session finished working.
    case taskComplete = "task_complete"
    /// A session stopped with an error.
    case taskFailed = "task_failed"
    /// A session was paused.
    case taskPaused = "task_paused"

    /// Whether the kind is about a session's state (not a question asked of the person).
    public var isTaskKind: Bool { self == .taskComplete || self == .taskFailed || self == .taskPaused }
}

/// Where a notification takes the app (notifications-2.md, "Deep links"):
/// `<scheme>://session/<id>`, `<scheme>://session/<id>/approval/<id>`,
/// `<scheme>://session/<id>/question/<id>` and `<scheme>://settings/notifications`, ids in
/// canonical lowercase and nothing else.
public enum AlertRoute: Sendable, Hashable {
    /// A session's screen.
    case session(UUID)
    /// An approval request of a session.
    case approval(session: UUID, request: UUID)
    /// An agent's question in a session.
    case question(session: UUID, question: UUID)
    /// The app's notification settings (iOS's notification-settings button opens it).
    case notificationSettings

    /// The default scheme of a deployment that did not choose one.
    public static let defaultScheme = "codingbridge"

    /// Whether `scheme` is one a deployment may choose: `^[a-z][a-z0-9+.-]{0,31}$`.
    public static func isValidScheme(_ scheme: String) -> Bool {
        scheme.wholeMatch(of: /[a-z][a-z0-9+.\-]{0,31}/) != nil
    }

    /// Reads a deep link strictly: the scheme must be `scheme` (compared without case, as URL
    /// schemes are), then exactly one of the four forms; ids in canonical lowercase; no user,
    /// port, query or fragment. Anything else is `nil`.
    public init?(url: URL, scheme: String) {
        guard let parts = URLComponents(url: url, resolvingAgainstBaseURL: false),
            parts.scheme?.lowercased() == scheme.lowercased(), parts.user == nil, parts.password == nil,
            parts.port == nil, parts.query == nil, parts.fragment == nil, let host = parts.host
        else { return nil }
        let path = parts.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        guard parts.path.isEmpty || parts.path.hasPrefix("/") else { return nil }
        func id(_ text: String) -> UUID? {
            guard let id = UUID.parse(text), id.canonical == text else { return nil }
            return id
        }
        switch (host, path.count) {
        case ("settings", 1) where path[0] == "notifications":
            self = .notificationSettings
        case ("session", 1):
            guard let session = id(path[0]) else { return nil }
            self = .session(session)
        case ("session", 3) where path[1] == "approval":
            guard let session = id(path[0]), let request = id(path[2]) else { return nil }
            self = .approval(session: session, request: request)
        case ("session", 3) where path[1] == "question":
            guard let session = id(path[0]), let question = id(path[2]) else { return nil }
            self = .question(session: session, question: question)
        default:
            return nil
        }
    }

    /// The deep link under `scheme`.
    public func url(scheme: String) -> URL {
        let path: String
        switch self {
        case .session(let session): path = "session/\(session.canonical)"
        case .approval(let session, let request): path = "session/\(session.canonical)/approval/\(request.canonical)"
        case .question(let session, let question):
            path = "session/\(session.canonical)/question/\(question.canonical)"
        case .notificationSettings: path = "settings/notifications"
        }
        // The scheme and path are ASCII of a fixed form: the URL always parses.
        return URL(string: "\(scheme)://\(path)")!
    }
}

/// Why a notification's payload was refused.
public enum AlertPayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The payload is not an alert of this project: a member is missing or of another form.
    case malformed(String)
    /// The payload is not an approval (a question or a session's state): it cannot be answered.
    case notAnApproval
    /// The request expired: answering it would be refused.
    case expired

    public var description: String {
        switch self {
        case .malformed(let why): "not an alert payload: \(why)"
        case .notAnApproval: "this notification is not an approval request: there is nothing to answer"
        case .expired: "this approval request has expired: it can no longer be answered"
        }
    }
}

/// A notification's payload as the app's extension or action handler receives it
/// (notifications-2.md, "Answering from the lock screen"), parsed strictly and synchronously.
public struct AlertPayload: Sendable, Hashable {
    public let kind: AlertKind
    public let sessionID: UUID
    /// Where a tap takes the app, from the kind and the ids (whatever the scheme).
    public let route: AlertRoute
    /// Approvals and questions: the request's (or question's) id, the asking device, the secret's
    /// generation, when it expires (Unix seconds) and the sealed content, when it fitted.
    public let requestID: UUID?
    public let requesterDeviceID: UUID?
    public let generation: UInt32?
    public let expiresAt: UInt64?
    public let sealed: String?

    /// Parses what iOS hands the app (`UNNotificationContent.userInfo`).
    ///
    /// - Throws: ``AlertPayloadError/malformed(_:)``.
    public init(userInfo: [AnyHashable: Any]) throws {
        var object: [String: Any] = [:]
        for (key, value) in userInfo {
            guard let key = key as? String else { throw AlertPayloadError.malformed("a key that is not a string") }
            object[key] = value
        }
        try self.init(object: object)
    }

    /// Parses the payload's JSON (as APNs delivers it, or as the outbox stores it).
    ///
    /// - Throws: ``AlertPayloadError/malformed(_:)``.
    public init(json: Data) throws {
        guard let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else {
            throw AlertPayloadError.malformed("not a JSON object")
        }
        try self.init(object: object)
    }

    init(object: [String: Any]) throws {
        guard let type = object["type"] as? String else { throw AlertPayloadError.malformed("no type") }
        guard let kind = AlertKind(rawValue: type) else { throw AlertPayloadError.malformed("an unknown type") }
        func id(_ name: String) throws -> UUID {
            guard let text = object[name] as? String, let id = UUID.parse(text) else {
                throw AlertPayloadError.malformed("no valid \(name)")
            }
            return id
        }
        func number(_ name: String) throws -> UInt64 {
            // A JSON number that is a whole number, not `true` or `false` (NSNumber's "c"), read
            // as an integer when it is one (a double loses digits past 2^53).
            guard let value = object[name] as? NSNumber else { throw AlertPayloadError.malformed("no valid \(name)") }
            switch String(cString: value.objCType) {
            case "c": throw AlertPayloadError.malformed("no valid \(name)")
            case "d", "f":
                guard let exact = UInt64(exactly: value.doubleValue) else {
                    throw AlertPayloadError.malformed("no valid \(name)")
                }
                return exact
            default:
                guard value.int64Value >= 0 else { throw AlertPayloadError.malformed("no valid \(name)") }
                return UInt64(value.int64Value)
            }
        }
        self.kind = kind
        sessionID = try id("sessionId")
        if kind.isTaskKind {
            requestID = nil
            requesterDeviceID = nil
            generation = nil
            expiresAt = nil
            sealed = nil
            route = .session(sessionID)
            return
        }
        let request = try id("requestId")
        requestID = request
        requesterDeviceID = try id("requesterDeviceId")
        let generation = try number("generation")
        guard (1...UInt64(Int32.max)).contains(generation) else {
            throw AlertPayloadError.malformed("no valid generation")
        }
        self.generation = UInt32(generation)
        let expires = try number("expiresAt")
        guard expires < 1 << 63 else { throw AlertPayloadError.malformed("no valid expiresAt") }
        expiresAt = expires
        switch object["sealed"] {
        case nil, is NSNull: sealed = nil
        case let text as String: sealed = text
        default: throw AlertPayloadError.malformed("sealed is not a string")
        }
        route =
            kind == .approval
            ? .approval(session: sessionID, request: request) : .question(session: sessionID, question: request)
    }
}
