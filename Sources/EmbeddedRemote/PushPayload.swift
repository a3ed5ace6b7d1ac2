import Foundation

/// A push as the embedded remote writes it to `push_outbox.payload` (docs/notifications.md,
/// docs/coordination.md): APNs' `aps` dictionary and the app's fields, every field the SQL's
/// `jsonb_build_object` writes for the same push and nothing else. An absent field is left out.
struct PushPayload: Encodable, Sendable {
    /// The `aps` dictionary.
    struct APS: Encodable, Sendable {
        /// A visible alert's generic text (the lock screen never shows more).
        struct Alert: Encodable, Sendable {
            var title: String
            var body: String
            var titleLocKey: String
            var locKey: String

            enum CodingKeys: String, CodingKey {
                case title, body
                case titleLocKey = "title-loc-key"
                case locKey = "loc-key"
            }
        }

        /// A live activity's state.
        struct ContentState: Encodable, Sendable {
            /// A todo list's progress; the current task only with details on.
            struct TodoProgress: Encodable, Sendable {
                var completed: Int
                var total: Int
                var currentTask: String
            }

            var status: String
            var currentOperation: String
            var elapsedSeconds: Int64
            var todoProgress: TodoProgress?
        }

        var alert: Alert?
        var sound: String?
        var category: String?
        var threadID: String?
        var interruptionLevel: String?
        var mutableContent: Int?
        var badge: Int?
        var contentAvailable: Int?
        var timestamp: Int64?
        var event: String?
        var contentState: ContentState?
        var staleDate: Int64?
        var dismissalDate: Int64?

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

        /// A silent push's: `content-available` 1, and the device's badge when it carries one.
        static func silent(badge: Int? = nil) -> APS { APS(badge: badge, contentAvailable: 1) }
    }

    var aps: APS
    var type: String?
    var requestId: String?
    var sessionId: String?
    var deepLink: String?
    var requesterDeviceId: String?
    var generation: Int64?
    var expiresAt: Int64?
    var sealed: String?
    var clearApprovalId: String?
    var clearQuestionId: String?
    var reason: String?
    var handedOffTo: String?

    /// The JSON text the outbox keeps: sorted keys, slashes as they are.
    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings and numbers only: encoding cannot fail.
        let data = (try? encoder.encode(self)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
