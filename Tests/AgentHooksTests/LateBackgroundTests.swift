import AgentHooks
import Foundation
import SecretCrypto
import SyncModel
import Testing

/// A background handler that runs late (a loaded machine) does not undo what a later event's
/// blocking handler did: a resume's SessionStart whose background part runs after the next
/// SessionEnd leaves the session ended (HookSequenceTests saw it reactivated once).
@Suite("Agent hooks: a late background handler")
struct LateBackgroundTests {
    @Test("a resume's background handler run after the SessionEnd that followed it leaves the session ended")
    func lateResumeLeavesEnded() async throws {
        let world = try await AgentWorld.make(.embedded)
        let events = try Events.recorded("session-lifecycle", session: "s-late", world: world)
        let id = world.session("s-late")
        let runner = AgentHookRunner(store: world.desktop) { try world.remote(for: world.desktop) }
        func run(_ index: Int, background: Bool) async throws {
            let input = Array(events[index].compactText.utf8)
            let event = try ClaudeCodeEvents.parse(input)
            let key = ByteEncoding.hex(SHA256.hash(input))
            _ = background ? await runner.handleInBackground(event, key: key) : await runner.handle(event, key: key)
        }
        // Start, end: each event's two handlers in order.
        for index in 0..<2 {
            try await run(index, background: false)
            try await run(index, background: true)
        }
        #expect(try await world.desktop.session(id: id)?.status == .ended)
        // The resume's blocking handler, then the end's two handlers, then the resume's late
        // background handler.
        try await run(2, background: false)
        #expect(try await world.desktop.session(id: id)?.status == .active)
        try await run(3, background: false)
        try await run(3, background: true)
        try await run(2, background: true)
        #expect(try await world.desktop.session(id: id)?.status == .ended, "the late resume reactivated the session")
    }
}
