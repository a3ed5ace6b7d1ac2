import ArgumentParser

/// `sync-cli`: the end-to-end encrypted session-secret sync engine from the command line.
@main
struct SyncCLI: AsyncParsableCommand {
    /// `sync-cli --version` (CHANGELOG.md says what each holds).
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "sync-cli",
        abstract: "End-to-end encrypted session-secret sync.",
        discussion: """
            A desktop pushes its repositories, sessions and each session's secret sealed to each \
            of the user's devices that qualify (active, a valid key, not a browser or temporary \
            viewer; `devices list` shows which and why): envelope v2 (RFC 9180 HPKE in auth mode, \
            the sender authenticated) to devices that read it, envelope v1 (X25519 + HKDF-SHA256 + \
            ChaCha20-Poly1305) to the others. A phone pulls and opens secrets on demand. The server \
            only ever sees ciphertext.

            Start with `sync-cli demo`. By hand: `init`, `login`, then `repo add` and `session start` \
            on a desktop, and `sync` on every device.
            """,
        version: SyncCLI.version,
        subcommands: [
            Demo.self, Init.self, Login.self, Repo.self, Session.self, Push.self, Pull.self, Sync.self,
            Status.self, Devices.self, Trust.self, Secrets.self, PushToken.self, Approval.self, Notifications.self,
            Outbox.self,
            Vectors.self,
        ]
    )
}
