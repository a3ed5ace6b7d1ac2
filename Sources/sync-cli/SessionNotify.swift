import ArgumentParser
import Foundation
import PostLoginSync
import RemoteStore
import SyncModel

extension SyncCLI.Session {
    /// The task kind a person names: complete, failed or paused.
    enum TaskEvent: String, ExpressibleByArgument, CaseIterable {
        case complete, failed, paused

        var kind: AlertKind {
            switch self {
            case .complete: .taskComplete
            case .failed: .taskFailed
            case .paused: .taskPaused
            }
        }
    }

    struct Notify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "notify",
            abstract: "Tell the user's other devices that a session this device runs is done, failed or paused.",
            discussion: """
                Queues a task alert (no content: the phone shows "Task complete" and the like, and a tap \
                opens the session) for the user's other trusted devices with a push token. The session's \
                own transitions raise these by themselves; this raises one on request. At most one task \
                alert per session and device a minute: the same kind again within it is coalesced, \
                another kind replaces one still waiting, so the latest state always arrives. A device \
                whose setting for the kind is off gets none; one whose user is active on the session \
                elsewhere (quiet while active) neither.
                """)
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The session: a full id, or an id or unambiguous prefix of one in this store.") var session:
            String
        @Argument(help: "complete, failed or paused.") var event: TaskEvent
        @Flag(help: "Print the counts as JSON.") var json = false

        func run() async throws {
            let context = try await CoordinationContext(storeOptions, remoteOptions)
            let id = try await context.session(session)
            // Only the desktop that runs a session may raise its task alerts: said here, before a
            // request the server would refuse with a reason that points elsewhere.
            let identity = try await context.store.requireIdentity()
            if let record = try await context.store.sessions().first(where: { $0.id == id }),
                record.deviceID != identity.id
            {
                throw CLIError(
                    "only the desktop that runs a session may notify about it: session \(id.canonical) runs on device "
                        + "\(record.deviceID.canonical); run `sync-cli session notify` there (nothing was sent)")
            }
            let alerts = SessionAlerts(local: context.store, remote: context.remote)
            let queued = try await context.run(migration: "notifications_2") { _ in
                try await alerts.notify(session: id, kind: event.kind)
            }
            if json { return try printJSON(queued) }
            output(
                "Session \(id.canonical): \(event.kind.rawValue) queued for \(queued.queued) device token\(queued.queued == 1 ? "" : "s")"
                    + " (coalesced \(queued.coalesced), suppressed \(queued.suppressed), off \(queued.off))."
                    + Self.whyNothing(queued))
        }

        /// Why a notify that queued nothing queued nothing, said beside the counts (issue 69 item 11:
        /// "queued for 0" alone reads as a failure).
        static func whyNothing(_ counts: SessionEventQueued) -> String {
            guard counts.queued == 0 else { return "" }
            if counts.coalesced > 0 {
                return " Nothing new was queued: the same alert is already queued for "
                    + "\(counted(counts.coalesced, "device token")) (at most one a minute per session and device)."
            }
            if counts.suppressed + counts.off > 0 { return "" }
            return " Nothing was queued: no other trusted device of yours has a valid push token that takes alerts "
                + "(register one on the phone with `sync-cli push-token register`; `sync-cli trust status` shows "
                + "which devices are trusted)."
        }
    }
}
