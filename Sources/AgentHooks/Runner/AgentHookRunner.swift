import Foundation
import LocalStore
import Logging
import PostLoginSync
import RemoteStore
import SyncModel

/// What one hook process ends with: the decision to print, and at most one line for standard
/// error (the agent shows it only in its debug log; it never holds the event's content).
public struct HookOutcome: Sendable, Hashable {
    public var decision: HookDecision
    public var problem: String?

    /// Creates an outcome.
    public init(_ decision: HookDecision = .none, problem: String? = nil) {
        self.decision = decision
        self.problem = problem
    }

    /// Nothing to print, nothing to say.
    public static let nothing = HookOutcome()
}

/// Runs an agent's hook events on this desktop (docs/agent-hooks.md, "Each event"): the library
/// behind `sync-cli agent hook`, for an app or another adapter to call.
///
/// Each event has up to two handlers, run by the agent at the same time:
/// - ``handle(_:key:)``, the **blocking** one: it writes only the local store (a short busy
///   timeout, never the sync lease) and answers at once, except a permission or a question sent
///   to the phone, which it waits for;
/// - ``handleInBackground(_:key:)``, the **background** one: the remote work (push, runtime
///   status, claims, alerts), in the order the agent fired the events, whichever process drains.
///
/// Every path ends with an outcome; none throws. A decision is `allow` only for a verified
/// answer to this call's own request.
public struct AgentHookRunner: Sendable {
    public let store: DeviceStore
    /// Opens the signed-in remote; called only by the work that needs it.
    public let remote: @Sendable () async throws -> any CompleteRemote
    let logger: Logger?
    /// The clock (tests move it).
    public var now: @Sendable () -> Date = { Date() }
    /// The process that waits on a request, as later events recognise it.
    public var process = ProcessIdentity.current
    /// How often a waiting request is read.
    public var pollInterval: Duration = .milliseconds(250)
    /// How long the background handler waits for the blocking handler's queue entry.
    public var journalWait: Duration = .seconds(3)

    /// Creates a runner.
    ///
    /// - Parameters:
    ///   - store: The desktop's store.
    ///   - remote: Opens the remote the store is signed in to.
    ///   - logger: Where to log (never an event's content).
    public init(
        store: DeviceStore, remote: @escaping @Sendable () async throws -> any CompleteRemote, logger: Logger? = nil
    ) {
        self.store = store
        self.remote = remote
        self.logger = logger
    }

    /// The blocking handler: the local effect of `event` and the decision to print.
    ///
    /// - Parameters:
    ///   - event: The event.
    ///   - key: The event's identity (SHA-256 of its input), shared with its background handler.
    public func handle(_ event: AgentEvent, key: String) async -> HookOutcome {
        do {
            switch event.kind {
            case .sessionStart(let source):
                guard source != "compact" else { return .nothing }
                do {
                    _ = try await ensureSession(event, reactivate: true)
                } catch {
                    // The first event of a session: the person hears why nothing reaches the phone.
                    let problem = Self.problem(error)
                    return HookOutcome(
                        .notice(problem.replacingOccurrences(of: "sync-cli agent hook: ", with: "sync-cli: ")),
                        problem: problem)
                }
                return HookOutcome(try await cannotActNotice().map(HookDecision.notice) ?? .none)
            case .promptSubmitted:
                try await store.setSetting(.agentDeskPromptAt, Int64(now().timeIntervalSince1970 * 1000))
                try await queue(event, key: key)
                return .nothing
            case .permissionRequest(let tool, let input):
                return await askPermission(event, tool: tool, input: input)
            case .preToolUse(let tool, let input):
                guard tool == "AskUserQuestion" else { return .nothing }
                return await askChoices(event, input: input)
            case .stop, .stopFailure, .sessionEnd:
                if case .sessionEnd = event.kind, let session = try await ensureSession(event, reactivate: false),
                    session.status != .ended
                {
                    try await store.endSession(session.id, at: now())
                }
                try await queue(event, key: key)
                return .nothing
            case .notification:
                // Only a background handler is installed for notifications; run as one.
                return await handleInBackground(event, key: key)
            case .other:
                return .nothing
            }
        } catch {
            return HookOutcome(problem: Self.problem(error))
        }
    }

    /// The session `event` belongs to, made when missing (hooks installed mid-session, or a first
    /// event without SessionStart): its id derived from the agent's (``AgentSessionName``), its
    /// repository found where the agent works (``RepositoryLocator``) and kept from then on.
    ///
    /// - Parameters:
    ///   - event: Any event of the session.
    ///   - reactivate: Whether an ended session starts again (a resume).
    /// - Returns: The session, or `nil` when the person deleted it (it stays deleted).
    public func ensureSession(_ event: AgentEvent, reactivate: Bool) async throws -> SessionRecord? {
        let identity = try await store.requireIdentity()
        guard identity.role == .desktop else {
            throw AgentEventError("this store is a phone's; agent hooks run on the desktop the agent runs on")
        }
        guard let user = identity.userID else {
            throw AgentEventError("this store is not logged in; run `sync-cli login`")
        }
        let id = AgentSessionName.sessionID(desktop: identity.id, agent: event.agent, agentSession: event.agentSession)
        if var session = try await store.session(id: id) {
            if reactivate && session.status == .ended {
                session.status = .active
                session.sessionEndedAt = nil
                session.updatedAt = now()
                try await store.upsertSessions([session])
                try await store.recordAgentSession(id, agent: event.agent.rawValue, agentSession: event.agentSession)
            }
            return session
        }
        if try await store.isAgentSession(id) {
            // Made by the event's other handler a moment ago (it records the session after
            // making it), or deleted by the person: then it stays deleted.
            return try await store.session(id: id)
        }
        let location = RepositoryLocator.locate(event.cwd ?? FileManager.default.currentDirectoryPath)
        let repository = try await repository(at: location, desktop: identity.id)
        let record = SessionRecord(
            id: id, userID: user, deviceID: identity.id, repositoryID: repository.id, title: event.agent.displayName,
            sessionPID: Int(getppid()), sessionStartedAt: now(), currentBranch: location.branch,
            workingDirectory: event.cwd.map { URL(fileURLWithPath: $0).standardizedFileURL.path },
            isWorktree: location.worktree != nil, worktreePath: location.worktree, createdAt: now(), updatedAt: now())
        do {
            try await store.createSession(record)
        } catch let error as LocalStoreError where error.code == .uniqueViolation {
            // The event's other handler made it a moment ago.
        }
        try await store.recordAgentSession(id, agent: event.agent.rawValue, agentSession: event.agentSession)
        return try await store.session(id: id)
    }

    /// This desktop's repository at `location`, added when missing (the event's other handler may
    /// add it at the same moment: then its row is used).
    func repository(at location: RepositoryLocation, desktop: UUID) async throws -> RepositoryRecord {
        func existing() async throws -> RepositoryRecord? {
            try await store.repositories().first { $0.deviceID == desktop && $0.localPath == location.topLevel }
        }
        if let found = try await existing() { return found }
        do {
            return try await store.addRepository(
                name: location.name, localPath: location.topLevel, remoteURL: location.remoteURL,
                defaultBranch: location.defaultBranch)
        } catch let error as LocalStoreError where error.code == .uniqueViolation {
            guard let found = try await existing() else { throw error }
            return found
        }
    }

    /// What to tell the person when this store cannot carry the session to the phone.
    func cannotActNotice() async throws -> String? {
        guard try await Self.isPaired(store) else {
            return "sync-cli: this desktop is not paired, so permissions and questions stay at the terminal; "
                + "pair it (`sync-cli trust init` on your first device, `sync-cli trust join` on the others)"
        }
        return nil
    }

    /// Whether `store` pinned the user's identity (a trust log, or an older identity key).
    public static func isPaired(_ store: DeviceStore) async throws -> Bool {
        if try await store.trustLogPin() != nil { return true }
        return try await store.pinnedIdentityKey() != nil
    }

    /// One line for standard error: what went wrong, never the event's content.
    static func problem(_ error: any Error) -> String {
        let text: String
        switch error {
        case let error as SyncError: text = error.message
        case let error as RemoteStoreError: text = error.description
        case let error as LocalStoreError: text = error.description
        case let error as AgentEventError: text = error.description
        // The engine's errors never carry an event's content; their descriptions say what to do.
        case let error as any CustomStringConvertible: text = error.description
        default: text = String(describing: type(of: error))
        }
        return "sync-cli agent hook: " + text.replacingOccurrences(of: "\n", with: " ")
    }
}
