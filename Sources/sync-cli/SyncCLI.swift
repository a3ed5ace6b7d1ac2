import ArgumentParser

/// `sync-cli`: the end-to-end encrypted session-secret sync engine from the command line.
@main
struct SyncCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync-cli",
        abstract: "End-to-end encrypted session-secret sync.",
        discussion: """
            Sessions' secrets are sealed per recipient device (X25519 + HKDF-SHA256 + \
            ChaCha20-Poly1305, envelope v1); the server only ever sees ciphertext.
            """,
        subcommands: [Demo.self, Vectors.self]
    )
}
