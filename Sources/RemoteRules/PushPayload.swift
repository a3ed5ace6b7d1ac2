import Foundation

/// A push as the server writes it to `push_outbox.payload` (docs/notifications.md,
/// docs/coordination.md): APNs' `aps` dictionary and the app's fields, every field the SQL's
/// `jsonb_build_object` writes for the same push and nothing else. An absent field is left out.
public struct PushPayload: Encodable, Sendable, Hashable {
    /// The `aps` dictionary.
    public struct APS: Encodable, Sendable, Hashable {
        /// A visible alert's generic text (the lock screen never shows more).
        public struct Alert: Encodable, Sendable, Hashable {
            public var title: String
            public var body: String
            public var titleLocKey: String
            public var locKey: String

            /// An alert's text and the keys of the app's strings for it.
            public init(title: String, body: String, titleLocKey: String, locKey: String) {
                (self.title, self.body, self.titleLocKey, self.locKey) = (title, body, titleLocKey, locKey)
            }

            enum CodingKeys: String, CodingKey {
                case title, body
                case titleLocKey = "title-loc-key"
                case locKey = "loc-key"
            }
        }

        /// A live activity's state.
        public struct ContentState: Encodable, Sendable, Hashable {
            /// A todo list's progress; the current task only with details on.
            public struct TodoProgress: Encodable, Sendable, Hashable {
                public var completed: Int
                public var total: Int
                public var currentTask: String
            }

            public var status: String
            public var currentOperation: String
            public var elapsedSeconds: Int64
            public var todoProgress: TodoProgress?
        }

        public var alert: Alert?
        public var sound: String?
        public var category: String?
        public var threadID: String?
        public var interruptionLevel: String?
        public var mutableContent: Int?
        public var badge: Int?
        public var contentAvailable: Int?
        public var timestamp: Int64?
        public var event: String?
        public var contentState: ContentState?
        public var staleDate: Int64?
        public var dismissalDate: Int64?

        enum CodingKeys: String, CodingKey {
            case alert, sound, category, badge, timestamp, event
            case threadID = "thread-id"
            case interruptionLevel = "interruption-level"
            case mutableContent = "mutable-content"
            case contentAvailable = "content-available"
            case contentState = "content-state"
            case staleDate = "stale-date"
            case dismissalDate = "dismissal-date"
        }

        /// An `aps` of the given members (left out: absent).
        public init(
            alert: Alert? = nil, sound: String? = nil, category: String? = nil, threadID: String? = nil,
            interruptionLevel: String? = nil, mutableContent: Int? = nil, badge: Int? = nil,
            contentAvailable: Int? = nil, timestamp: Int64? = nil, event: String? = nil,
            contentState: ContentState? = nil, staleDate: Int64? = nil, dismissalDate: Int64? = nil
        ) {
            (self.alert, self.sound, self.category, self.threadID) = (alert, sound, category, threadID)
            (self.interruptionLevel, self.mutableContent, self.badge) = (interruptionLevel, mutableContent, badge)
            (self.contentAvailable, self.timestamp, self.event) = (contentAvailable, timestamp, event)
            (self.contentState, self.staleDate, self.dismissalDate) = (contentState, staleDate, dismissalDate)
        }

        /// A silent push's: `content-available` 1, and the device's badge when it carries one.
        public static func silent(badge: Int? = nil) -> APS { APS(badge: badge, contentAvailable: 1) }
    }

    public var aps: APS
    public var type: String?
    public var requestId: String?
    public var sessionId: String?
    public var deepLink: String?
    public var requesterDeviceId: String?
    public var generation: Int64?
    public var expiresAt: Int64?
    public var sealed: String?
    public var clearApprovalId: String?
    public var clearQuestionId: String?
    public var reason: String?
    public var handedOffTo: String?

    /// A payload of `aps` and the given app fields (left out: absent).
    public init(
        aps: APS, type: String? = nil, requestId: String? = nil, sessionId: String? = nil, deepLink: String? = nil,
        requesterDeviceId: String? = nil, generation: Int64? = nil, expiresAt: Int64? = nil, sealed: String? = nil,
        clearApprovalId: String? = nil, clearQuestionId: String? = nil, reason: String? = nil,
        handedOffTo: String? = nil
    ) {
        (self.aps, self.type, self.requestId, self.sessionId, self.deepLink) = (
            aps, type, requestId, sessionId, deepLink
        )
        (self.requesterDeviceId, self.generation, self.expiresAt) = (requesterDeviceId, generation, expiresAt)
        (self.sealed, self.clearApprovalId, self.clearQuestionId) = (sealed, clearApprovalId, clearQuestionId)
        (self.reason, self.handedOffTo) = (reason, handedOffTo)
    }

    /// The JSON text the outbox keeps: compact, sorted keys, slashes as they are.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings and numbers only: encoding cannot fail.
        let data = (try? encoder.encode(self)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
