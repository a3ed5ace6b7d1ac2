import AgentHooks
import AgentImitation
import DeviceTrust
import Foundation
import GRDB
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import TestStack
import Testing

/// What a server, a token holder or another device could do to an agent's hooks, each closed
/// (docs/agent-hooks.md, "Never allow by mistake"): no decision or choice but a verified answer to
/// this very call's request makes the hook allow.
@Suite("Agent hooks: threats", .serialized)
struct AgentThreatTests {
    /// Runs SQL with the powers of the service role (the stack's superuser, or the embedded file).
    static func asServiceRole(_ world: AgentWorld, _ sql: String) async throws {
        switch world.backend {
        case .embedded:
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let queue = try DatabaseQueue(
                path: world.directory.appendingPathComponent("remote.sqlite").path, configuration: configuration)
            try await queue.write { try $0.execute(sql: sql) }
        case .postgrest:
            _ = try await StackEnvironment.require().sql(sql)
        }
    }

    /// The pending request the hook made (waiting for it).
    static func pendingRequest(_ world: AgentWorld, besides known: Set<UUID> = []) async throws -> ApprovalRequestRow {
        let deadline = ContinuousClock.now + Waiting.ceiling
        while ContinuousClock.now < deadline {
            if let row = try await world.remote().approvalRequests(status: .pending).first(where: {
                !known.contains($0.id)
            }) {
                return row
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw CancellationError()
    }

    /// Writes a decision on the request's row as only the server could.
    static func plant(
        _ world: AgentWorld, on request: UUID, body: String, signature: String, by device: UUID
    ) async throws {
        try await asServiceRole(
            world,
            """
            UPDATE \(world.backend == .postgrest ? "public." : "")approval_requests SET status = 'approved',
                decided_by_device_id = '\(device.canonical)', decided_at = \(world.backend == .postgrest ? "now()" : "'\(Timestamp.format(Date()))'"),
                decision_body = '\(body)', decision_signature = '\(signature)'
            WHERE id = '\(request.canonical)'
            """)
    }

    @Test(
        "a forged, replayed, cross-request, cross-session or cross-call decision never makes the hook allow",
        arguments: Backend.available)
    func forgedDecisions(backend: Backend) async throws {
        let world = try await AgentWorld.make(backend)
        try await world.install(["--away", "always", "--away-wait", Waiting.answerWindow])
        let agent = world.agent()
        _ = try await agent.fire(Events.start("s-a", world: world))
        _ = try await agent.fire(Events.start("s-b", world: world))
        try await agent.settle()
        let input = Events.bash("s-a", world: world, command: "git push --force")

        // A genuine approval of the first call: its decision is what the attacker replays.
        let phone = Task { try await Phone.answer(.approve, world: world) }
        #expect(try await agent.fire(input).permission == .allow(updatedInput: nil, updatedPermissions: nil))
        _ = try await phone.value
        let first = try #require(try await world.remote().approvalRequests(status: nil).first)
        let genuineBody = try #require(first.decisionBody), genuineSignature = try #require(first.decisionSignature)

        // The same input asked again (cross-call), then in another session (cross-session): the
        // genuine decision of the first request is planted on each; a made-up one too. The hook
        // must refuse it, reopen the request and keep waiting: the phone then denies, and the
        // hook says so. (A short wait here raced the clock: on one loaded core the hook gave up
        // before the planter had seen its request pending.)
        for (event, forged) in [
            (input, (genuineBody, genuineSignature)),
            (Events.bash("s-b", world: world, command: "git push --force"), (genuineBody, genuineSignature)),
            (
                input,
                (
                    ByteEncoding.base64(Array(repeating: 7, count: 200)),
                    ByteEncoding.base64(Array(repeating: 9, count: 64))
                )
            ),
        ] {
            let known = Set(try await world.remote().approvalRequests(status: nil).map(\.id))
            let planter = Task {
                let row = try await Self.pendingRequest(world, besides: known)
                try await Self.plant(world, on: row.id, body: forged.0, signature: forged.1, by: world.phoneID)
                // Phone.answer waits for a pending request: this one, once the hook reopened it.
                _ = try await Phone.answer(.deny, world: world)
            }
            let fired = try await agent.fire(event)
            try await planter.value
            #expect(fired.permission == .deny(message: "Denied from your phone"), "the hook took a planted decision")
            #expect(fired.runs.allSatisfy { !$0.stdout.contains("allow") })
        }
        try await agent.settle()
    }

    @Test("a forged or replayed choice never makes the hook answer the question", arguments: Backend.available)
    func forgedChoices(backend: Backend) async throws {
        let world = try await AgentWorld.make(backend)
        try await world.install(["--away", "always", "--away-wait", Waiting.answerWindow])
        let agent = world.agent()
        _ = try await agent.fire(Events.start("s-q", world: world))
        try await agent.settle()
        // A genuine answer to the first question.
        let phone = Task { try await Phone.choose([[0], [1]], world: world) }
        #expect(try await agent.fire(Events.askUserQuestion("s-q", world: world)).preToolUse?.decision == "allow")
        let first = try await phone.value
        let genuine = try #require(
            try await world.remote().questionAnswers(questionID: first.question.id).first)

        // The same question asked again: the first answer planted on it (replay, cross-call), then
        // bytes that are no answer. The hook waits its whole window (no clock races the planter);
        // once the plant is in, the hook gets two seconds (eight of its reads) to judge it, then
        // the question is closed from the desktop, as another hook process would. A busier
        // machine can only make a round weaker, never fail it falsely. (An 8 s wait here let the
        // hook give up before the planter saw its question, and the round passed on nothing.)
        for forged in [genuine.answer, ByteEncoding.base64([0x01, 0, 0, 0, 1] + Array(repeating: 5, count: 120))] {
            let known = Set(try await Phone.questions(world: world))
            let planter = Task {
                var id: UUID?
                let deadline = ContinuousClock.now + Waiting.ceiling
                while id == nil, ContinuousClock.now < deadline {
                    id = try await Phone.questions(world: world).first { !known.contains($0) }
                    try await Task.sleep(for: .milliseconds(20))
                }
                let question = try #require(id)
                let desktop = try world.remote(for: world.desktop)
                do {
                    let table = world.backend == .postgrest ? "public.agent_question_answers" : "agent_question_answers"
                    let created = world.backend == .postgrest ? "now()" : "'\(Timestamp.format(Date()))'"
                    try await Self.asServiceRole(
                        world,
                        """
                        INSERT INTO \(table) (question_id, user_id, device_id, answer, created_at)
                        VALUES ('\(question.canonical)', '\(world.user.canonical)', '\(world.phoneID.canonical)', '\(forged)', \(created))
                        """)
                    let open = try await world.remote().agentQuestion(id: question)?.status(at: Date())
                    #expect(open == .pending || open == .answered, "the plant landed after the hook gave up")
                    try await Task.sleep(for: .seconds(2))
                } catch {
                    // The hook would otherwise wait its whole window.
                    _ = try? await desktop.closeQuestion(questionID: question, status: .cancelled)
                    throw error
                }
                // Still open: the hook was waiting, and took no answer.
                let closed = try await desktop.closeQuestion(questionID: question, status: .cancelled)
                #expect(closed.closed, "the hook had ended its question before the plant was judged")
            }
            let fired = try await agent.fire(Events.askUserQuestion("s-q", world: world))
            try await planter.value
            #expect(fired.preToolUse == nil, "a planted answer made the hook answer")
            #expect(fired.runs.allSatisfy { $0.stderr.isEmpty && !$0.timedOut }, "the hook failed rather than refused")
        }
        try await agent.settle()
    }

    @Test(
        "the tool input is found nowhere on the server, in a payload, the hook's argv or its output",
        arguments: Backend.available)
    func inputStaysSealed(backend: Backend) async throws {
        let world = try await AgentWorld.make(backend)
        try await world.install(["--away", "always", "--away-wait", Waiting.answerWindow])
        let agent = world.agent()
        let marker = "MARKER-\(UUID().canonical)"
        _ = try await agent.fire(Events.start("s-marker", world: world))
        try await agent.settle()
        let argv = Task { () -> String in
            // The waiting hook process, found through the request it recorded.
            var record: AgentRequestRecord?
            let deadline = ContinuousClock.now + Waiting.ceiling
            while record == nil, ContinuousClock.now < deadline {
                record = try await world.desktop.agentRequests().first
                try await Task.sleep(for: .milliseconds(10))
            }
            let pid = try #require(record).ownerPID
            return (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
        }
        let phone = Task { try await Phone.answer(.approve, world: world) }
        let fired = try await agent.fire(
            Events.bash("s-marker", world: world, command: "curl https://example.com/\(marker)", description: marker))
        _ = try await phone.value
        let commandLine = try await argv.value
        try await agent.settle()
        #expect(fired.permission == .allow(updatedInput: nil, updatedPermissions: nil))
        #expect(commandLine.contains("agent") && !commandLine.contains(marker))
        for run in fired.runs { #expect(!run.stdout.contains(marker) && !run.stderr.contains(marker)) }
        let outbox = try await world.remote().listOutbox(limit: 500).map(\.payload).joined()
        #expect(!outbox.contains(marker))
        let server: String
        switch backend {
        case .embedded:
            server = ["remote.sqlite", "remote.sqlite-wal"].map {
                String(
                    decoding: (try? Data(contentsOf: world.directory.appendingPathComponent($0))) ?? Data(),
                    as: UTF8.self)
            }.joined()
        case .postgrest:
            server = try await StackEnvironment.require().sql(
                "SELECT string_agg(t::text, ' ') FROM (SELECT row_to_json(r)::text AS t FROM public.approval_requests r "
                    + "UNION ALL SELECT row_to_json(o)::text FROM public.push_outbox o) x")
        }
        #expect(!server.contains(marker), "the tool input reached the server in plaintext")
    }
}
