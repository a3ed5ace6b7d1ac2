import RemoteContract
import RemoteRules
import SyncModel

/// The payload groups of `UNBOUND-REMOTE-RULES-V1`: AlertPayload, LiveActivityPayload and
/// SilentPayload, whose answer is a push's compact JSON with sorted keys as `PushPayloads`
/// writes it (absent: nothing is queued).
extension RemoteRulesGroup {
    /// An AlertPayload test's request, as `approval_requests` and `agent_questions` hold it.
    public struct PayloadRequest: Codable, Sendable, Hashable {
        public var id: String
        public var requesterDeviceId: String
        public var generation: Int64
        public var expiresAt: Int64
        public var sealed: String

        /// The request as the rule takes it.
        public var value: PushPayloads.Request {
            .init(
                id: id, requesterDeviceID: requesterDeviceId, generation: generation, expiresAt: expiresAt,
                sealed: sealed)
        }

        /// A request's fields as the file writes them.
        public init(_ request: PushPayloads.Request) {
            (id, requesterDeviceId, generation) = (request.id, request.requesterDeviceID, request.generation)
            (expiresAt, sealed) = (request.expiresAt, request.sealed)
        }
    }

    /// A LiveActivityPayload test's `todo_progress`, as a runtime status holds it.
    public struct Todo: Codable, Sendable, Hashable {
        public var completed: Int
        public var total: Int
        public var currentTask: String?

        enum CodingKeys: String, CodingKey {
            case completed, total
            case currentTask = "current_task"
        }

        /// The progress as the rule takes it.
        public var value: RuntimeStatus.TodoProgress {
            .init(completed: completed, total: total, currentTask: currentTask)
        }

        /// Progress as the file writes it.
        public init(_ todo: RuntimeStatus.TodoProgress) {
            (completed, total, currentTask) = (todo.completed, todo.total, todo.currentTask)
        }
    }

    /// Whether `PushPayloads` writes the test's `payload` byte for byte; `nil` when the test's
    /// fields are missing or malformed.
    static func payloadMatches(_ kind: Kind, _ test: Test) -> Bool? {
        switch kind {
        case .alertPayload:
            guard let alert = test.kind.flatMap(AlertKind.init(rawValue:)),
                let decision = test.decision.flatMap(AlertDecision.init(rawValue:)), let session = test.sessionId,
                let scheme = test.scheme, let timeSensitive = test.timeSensitive, let badge = test.badge
            else { return nil }
            return PushPayloads.alert(
                alert, session: session, scheme: scheme, request: test.request?.value, decision: decision,
                timeSensitive: timeSensitive, badge: badge)?.json == test.payload
        case .liveActivityPayload:
            guard let stamp = test.stamp, let event = test.event.flatMap(LiveActivityEvent.init(rawValue:)),
                let status = test.status, let details = test.showDetails
            else { return nil }
            return PushPayloads.liveActivity(
                at: stamp, event: event, status: status, operation: test.operation, showDetails: details,
                runtimeOperation: test.runtimeOperation, todo: test.todo?.value, startedAt: test.startedAt
            ).json == test.payload
        case .silentPayload:
            switch test.push {
            case "clearing":
                guard let alert = test.kind.flatMap(AlertKind.init(rawValue:)), let request = test.requestId,
                    let reason = test.reason, let badge = test.badge
                else { return nil }
                return PushPayloads.clearing(alert, request: request, reason: reason, badge: badge)?.json
                    == test.payload
            case "handoff":
                guard let session = test.sessionId, let client = test.handedOffTo else { return nil }
                return PushPayloads.handoff(session: session, to: client).json == test.payload
            default: return nil
            }
        default: return nil
        }
    }
}
