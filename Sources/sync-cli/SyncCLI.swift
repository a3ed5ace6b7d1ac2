import ArgumentParser

/// `sync-cli`: the end-to-end encrypted session-secret sync engine from the command line.
@main
struct SyncCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync-cli",
        abstract: "End-to-end encrypted session-secret sync.",
        discussion: """
            A desktop pushes its repositories, sessions and each session's secret sealed to each \
            of the user's devices that qualify (active, a valid key, not a browser or temporary \
            viewer; `devices list` shows which and why) with X25519 + HKDF-SHA256 + \
            ChaCha20-Poly1305 (envelope v1); a phone pulls and opens secrets on demand. The server \
            only ever sees ciphertext.

            Start with `sync-cli demo`. By hand: `init`, `login`, then `repo add` and `session start` \
            on a desktop, and `sync` on every device.
            """,
        subcommands: [
            Demo.self, Init.self, Login.self, Repo.self, Session.self, Push.self, Pull.self, Sync.self,
            Status.self, Devices.self, Trust.self, Secrets.self, PushToken.self, Approval.self, Notifications.self,
            Outbox.self,
            Vectors.self,
        ]
    )
}
