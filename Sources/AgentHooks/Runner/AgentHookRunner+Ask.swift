import Foundation
import LocalStore
import Logging
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

// Asking the phone (docs/agent-hooks.md, "Asking the phone" and "Questions"): the away rule, one
// request per hook call, and a decision only for a verified answer to that request.
extension AgentHookRunner {
    /// Permission modes in which nothing is asked.
    static let quietModes: Set<String> = ["bypassPermissions", "dontAsk", "plan"]

    /// A permission: `allow` or `deny` for a verified answer on the phone, else nothing.
    func askPermission(_ event: AgentEvent, tool: String, input: JSONValue) async -> HookOutcome {
        if let mode = event.permissionMode, Self.quietModes.contains(mode) { return .nothing }
        guard tool != "ExitPlanMode", tool != "AskUserQuestion" else { return .nothing }
        do {
            guard let session = try await ensureSession(event, reactivate: false) else { return .nothing }
            let (destination, note) = try await route(for: session.id)
            guard case .phone(let wait) = destination else { return HookOutcome(problem: note) }
            let rule = try await AwayRule.load(from: store)
            guard
                let prompt = ToolPrompt.make(
                    toolName: tool, input: input, subagent: event.subagent,
                    repository: try await repositoryPath(of: session), allowTruncated: rule.allowTruncated)
            else {
                return HookOutcome(
                    problem: "sync-cli agent hook: the permission is too large for the phone; ask at the terminal")
            }
            let remote = try await self.remote()
            try await pushIfNeeded(session.id, remote: remote)
            let center = ApprovalCenter(local: store, remote: remote, logger: logger)
            // The request stands a little longer than this call waits, so that this call ends it
            // (cancelled, its prompts cleared) rather than letting it lapse.
            let outcome = try await waiting(wait) {
                try await center.request(
                    session: session.id, tool: prompt.tool, summary: prompt.summary, detail: prompt.detail,
                    timeout: min(wait + .seconds(10), ApprovalCenter.timeouts.upperBound), pollInterval: pollInterval,
                    onAsk: { [self] in try await record($0, kind: .approval) })
            }
            switch outcome {
            case .approved:
                try await forgetOwnRequests()
                return HookOutcome(.allow)
            case .denied:
                try await forgetOwnRequests()
                return HookOutcome(.deny)
            case .expired, .cancelled, nil: return .nothing
            }
        } catch {
            return HookOutcome(problem: Self.problem(error))
        }
    }

    /// An `AskUserQuestion` call: `allow` with the original input and the answers for a verified
    /// choice on the phone, else nothing (the terminal asks).
    func askChoices(_ event: AgentEvent, input: JSONValue) async -> HookOutcome {
        if let mode = event.permissionMode, Self.quietModes.contains(mode) { return .nothing }
        guard input["answers"] == nil, let asked = AskedChoices(input) else { return .nothing }
        do {
            guard let session = try await ensureSession(event, reactivate: false) else { return .nothing }
            let (destination, note) = try await route(for: session.id)
            guard case .phone(let wait) = destination else { return HookOutcome(problem: note) }
            let remote = try await self.remote()
            try await pushIfNeeded(session.id, remote: remote)
            let alerts = SessionAlerts(local: store, remote: remote, logger: logger)
            // A question stands at least a minute and at most a day (the remote's rule); this call
            // waits `wait`, then closes it.
            let outcome = try await waiting(wait) {
                try await alerts.ask(
                    session: session.id, choices: asked.shown,
                    timeout: min(
                        max(wait + .seconds(10), SessionAlerts.questionTimeouts.lowerBound),
                        SessionAlerts.questionTimeouts.upperBound),
                    pollInterval: pollInterval, onAsk: { [self] in try await record($0, kind: .question) })
            }
            guard case .answered(_, let choices) = outcome, let answers = asked.answers(choices) else {
                return .nothing
            }
            try await forgetOwnRequests()
            return HookOutcome(.answers(input: input, answers: answers))
        } catch {
            return HookOutcome(problem: Self.problem(error))
        }
    }

    /// Runs the request, giving up after `wait` (which cancels it: the request is cancelled on the
    /// remote and its prompts cleared). Its local record stays unless it was answered: once this
    /// process is gone, the next event's background handler cancels it again, in case the
    /// cancellation did not reach the remote.
    func waiting<T: Sendable>(_ wait: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: wait)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    /// Forgets the requests this process recorded, once they were answered.
    func forgetOwnRequests() async throws {
        for request in try await store.agentRequests() where request.ownerPID == process.pid {
            try await store.removeAgentRequest(request.requestID)
        }
    }

    /// Keeps a request's control and this process, so a later event cancels it if this process dies.
    func record(_ asked: AskedRequest, kind: AgentRequestRecord.Kind) async throws {
        try await store.recordAgentRequest(
            AgentRequestRecord(
                requestID: asked.requestID, kind: kind, sessionID: asked.sessionID, ownerPID: process.pid,
                ownerStarted: process.started, control: asked.control, expiresAt: asked.expiresAt, createdAt: now()))
    }

    /// Where a request goes now: the away rule over this desk's last prompt and, when it depends
    /// on it, the session's handoff claim read within ``AwayRule/remoteReadLimit``; with a note
    /// when that read failed (the terminal asks then).
    func route(for session: UUID) async throws -> (AwayRule.Route, String?) {
        let rule = try await AwayRule.load(from: store)
        let lastPrompt = try await store.setting(.agentDeskPromptAt).map {
            Date(timeIntervalSince1970: TimeInterval($0) / 1000)
        }
        let at = now()
        guard rule.needsClaim(lastDeskPrompt: lastPrompt, now: at) else {
            return (rule.route(lastDeskPrompt: lastPrompt, now: at, claim: .none), nil)
        }
        let me = try await store.requireIdentity().id
        let remote = self.remote
        let claim: AwayRule.Claim
        var note: String?
        do {
            claim = try await ApprovalCenter.within(AwayRule.remoteReadLimit) {
                guard let holder = try await remote().sessionHolder(sessionID: session) else {
                    return AwayRule.Claim.none
                }
                let fresh = holder.lastActivityAt.map { at.timeIntervalSince($0) < AwayRule.claimFreshness } ?? false
                return holder.deviceID != me && holder.clientType == "ios" && fresh ? .phoneFresh : .none
            }
        } catch {
            claim = .unknown
            note =
                "sync-cli agent hook: the remote did not say who holds the session within 300 ms "
                + "(\(Self.problem(error).replacingOccurrences(of: "sync-cli agent hook: ", with: ""))); asked at the terminal"
        }
        return (rule.route(lastDeskPrompt: lastPrompt, now: at, claim: claim), note)
    }

    /// Where the agent works, to show paths relative to it: the session's worktree, else its
    /// repository's top level.
    func repositoryPath(of session: SessionRecord) async throws -> String? {
        if let worktree = session.worktreePath { return worktree }
        return try await store.repositories().first { $0.id == session.repositoryID }?.localPath
    }

    /// Pushes when the session's secret has reached no device yet: the phone needs it to read
    /// the request. Waits for another sync of the store at most 20 seconds.
    func pushIfNeeded(_ session: UUID, remote: any CompleteRemote) async throws {
        guard try await store.ledger(sessions: [session]).isEmpty else { return }
        var options = SyncOptions()
        options.leaseTimeout = .seconds(20)
        _ = try await SyncEngine(local: store, remote: remote, options: options, logger: logger).push()
    }
}

/// An `AskUserQuestion` input read strictly (its questions, each option's label), with what the
/// phone is shown and how chosen indexes become the answers the tool takes.
struct AskedChoices {
    /// The questions as the agent wrote them.
    let original: [(question: String, labels: [String], multiSelect: Bool)]
    /// The same, hidden characters made visible, as sealed for the phone.
    let shown: [ChoiceQuestion]

    /// Reads `input`; `nil` for anything the phone cannot be asked (no questions, more than four,
    /// a question or an option label twice, an option without a label, limits the phone's
    /// content does not allow): the terminal asks then.
    init?(_ input: JSONValue) {
        guard let items = input["questions"]?.array, (1...4).contains(items.count) else { return nil }
        var original: [(String, [String], Bool)] = []
        var shown: [ChoiceQuestion] = []
        for item in items {
            guard let question = item["question"]?.string, let options = item["options"]?.array else { return nil }
            let labels = options.compactMap { $0["label"]?.string ?? $0.string }
            guard labels.count == options.count, Set(labels).count == labels.count else { return nil }
            let multiSelect = item["multiSelect"]?.bool ?? false
            original.append((question, labels, multiSelect))
            guard
                let visible = try? ChoiceQuestion(
                    question: VisibleText.make(question, keepsLines: true),
                    header: VisibleText.make(item["header"]?.string ?? ""),
                    options: labels.map { VisibleText.make($0) }, multiSelect: multiSelect)
            else { return nil }
            shown.append(visible)
        }
        guard Set(original.map(\.0)).count == original.count, (try? QuestionContent(choices: shown)) != nil else {
            return nil
        }
        self.original = original
        self.shown = shown
    }

    /// Each question's text and the label(s) `choices` name, as the tool takes them: a
    /// multi-select's labels joined by ", " (Claude Code's own separator); `nil` when a choice
    /// does not fit its question.
    func answers(_ choices: [[Int]]) -> [(question: String, answer: String)]? {
        guard choices.count == original.count else { return nil }
        var answers: [(question: String, answer: String)] = []
        for (indexes, question) in zip(choices, original) {
            guard !indexes.isEmpty, question.multiSelect || indexes.count == 1,
                indexes.allSatisfy({ question.labels.indices.contains($0) })
            else { return nil }
            answers.append((question.question, indexes.map { question.labels[$0] }.joined(separator: ", ")))
        }
        return answers
    }
}
