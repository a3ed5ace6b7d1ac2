import ArgumentParser
import DeviceTrust
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SyncModel

// `trust init`, `trust recovery-key new|migrate`, `trust rotate-identity`: starting the log and
// replacing its keys.
extension SyncCLI.Trust {
    /// `--json` of the commands that start a log or replace its keys.
    struct Started: Encodable {
        /// `null` only when it could not be read back after the key was bound.
        let identityFingerprint: String?
        let head: TrustLogPosition?
        let trustRoot: Bool
        /// Shown once; absent when none was made.
        let recoveryKey: String?
    }

    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init", abstract: "Start the user's trust log with this desktop as its first trust root.",
            discussion: """
                Needs a sign-in in the last 10 minutes (`sync-cli login`, then this). Refused when \
                the user already has a trust log or an identity from before it (on a root too: it \
                never replaces anything): pair this device with `trust join` instead.

                Prints a recovery key once: write it down. With it, `trust recover` makes another \
                desktop of yours a trust root if every root is lost; the server keeps only \
                backups it cannot open.

                \(TrustExit.help)
                """
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Flag(help: "Bind no recovery key (if every root is lost, only a 72-hour reset remains).")
        var noRecoveryKey = false
        @Flag(help: "Do not draw the recovery key's QR code.") var noQr = false
        @Flag(help: "Print the result as JSON (with the recovery key).") var json = false

        func run() async throws {
            try await TrustExit.run {
                let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                // Said before pinning: these devices get no new secret until they are paired.
                let cutOff = try await manager.devicesThatWillNeedPairing()
                if !cutOff.isEmpty && !json {
                    printError(
                        "Warning: once the trust log starts, \(cutOff.count) device(s) stop receiving secrets until they are paired:"
                    )
                    for device in cutOff {
                        printError("  \(device.deviceID.canonical)  \(device.name)  [\(device.deviceType ?? "?")]")
                    }
                    printError(
                        "Pair each: `sync-cli trust invite` here, `sync-cli trust join` there. Until then `sync-cli push --trust any` keeps sealing to them."
                    )
                }
                let started = try await manager.initialize(recovery: noRecoveryKey ? .none : .new)
                if json {
                    try printJSON(
                        Started(
                            identityFingerprint: started.fingerprint.description, head: started.head, trustRoot: true,
                            recoveryKey: started.recoveryKey?.revealText()))
                    if started.recoveryKey != nil { manager.recoveryKeyShown() }
                    return
                }
                output("This device started the user's trust log and is its trust root.")
                output("Identity fingerprint: \(started.fingerprint)")
                output("Trust log head: \(started.head)")
                if let recoveryKey = started.recoveryKey {
                    try TrustCommand.show(recoveryKey, qr: !noQr, manager: manager)
                }
                output(
                    "Pair another device: `sync-cli trust invite` here, then `sync-cli trust join` there (it asks for the code)."
                )
            }
        }
    }

    struct RecoveryKeyCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "recovery-key",
            abstract: "The recovery key bound to the trust log.",
            subcommands: [New.self, Show.self, Migrate.self]
        )

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "show",
                abstract: "Trust root: print a new recovery key the log binds that was never shown, once.",
                discussion: """
                    A command that binds a new recovery key (`trust init`, `trust recovery-key \
                    new`, `trust rotate-identity`, revoking a root, `trust recovery-key migrate`) \
                    keeps it in recovery.unshown.key (0600) from before its append until it has \
                    printed it. When its answer was lost, or it ended before printing, `trust \
                    status` and every sync say so, and this prints it once the log shows it is \
                    bound, then forgets it. A kept key the log does not bind is left as it is \
                    (its command may still be appending); the next command that binds a key \
                    replaces it.

                    \(TrustExit.help)
                    """
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Flag(help: "Do not draw the recovery key's QR code.") var noQr = false
            @Flag(help: "Print the key as JSON ({\"recoveryKey\": null} when none waits).") var json = false

            func run() async throws {
                try await TrustExit.run {
                    let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                    let recoveryKey = try await manager.unshownRecoveryKey()
                    if json {
                        try printJSON(["recoveryKey": recoveryKey?.revealText()])
                        if recoveryKey != nil { manager.recoveryKeyShown() }
                        return
                    }
                    guard let recoveryKey else {
                        return output(
                            "No recovery key waits to be shown: the one bound (if any) was shown when it was made.")
                    }
                    output("This recovery key is bound to the trust log and was never shown.")
                    try TrustCommand.show(recoveryKey, qr: !noQr, manager: manager)
                }
            }
        }

        struct New: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "new",
                abstract: "Trust root: bind a new recovery key; the old one opens nothing written from now on.",
                discussion: """
                    A succession: a new identity key (handed to every other root) whose backups \
                    only the new recovery key opens. The old key still opens backups of retired \
                    keys, which recover nothing (a recovery must reach the key in force).

                    \(TrustExit.help)
                    """
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Flag(help: "Do not draw the recovery key's QR code.") var noQr = false
            @Flag(help: "Print the key as JSON.") var json = false

            func run() async throws {
                try await TrustExit.run {
                    let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                    let recoveryKey = try await manager.newRecoveryKey()
                    try await TrustCommand.printNewKey(recoveryKey, manager: manager, json: json, qr: !noQr)
                }
            }
        }

        struct Migrate: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "migrate",
                abstract: "Legacy trust root: start the trust log now, with a new recovery key printed here.",
                discussion: """
                    For an identity made before the trust log: this root starts the log with the \
                    legacy identity key, hands over to a fresh one (the legacy key, which every \
                    legacy root and the legacy backup hold, verifies nothing from then on), vetoes \
                    any pending reset, and carries over every device, revocation and root the \
                    legacy rows verifiably hold. A root's sync does the same (without a recovery \
                    key) once signed in fresh; this prints the new recovery key to the terminal. \
                    Needs a sign-in in the last 10 minutes.

                    \(TrustExit.help)
                    """
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Flag(help: "Bind no recovery key.") var noRecoveryKey = false
            @Flag(help: "Do not draw the recovery key's QR code.") var noQr = false
            @Flag(help: "Print the result as JSON (with the recovery key).") var json = false

            func run() async throws {
                try await TrustExit.run {
                    let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                    let started = try await manager.migrate(recoveryKey: noRecoveryKey ? nil : RecoveryKey())
                    if json {
                        try printJSON(
                            Started(
                                identityFingerprint: started.fingerprint.description, head: started.head,
                                trustRoot: true, recoveryKey: started.recoveryKey?.revealText()))
                        if started.recoveryKey != nil { manager.recoveryKeyShown() }
                        return
                    }
                    output("The identity now lives in the trust log; this device is its trust root.")
                    output("Identity fingerprint: \(started.fingerprint)")
                    if let recoveryKey = started.recoveryKey {
                        try TrustCommand.show(recoveryKey, qr: !noQr, manager: manager)
                    }
                }
            }
        }
    }

    struct RotateIdentity: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-identity",
            abstract:
                "Trust root: replace the identity key (its seed may be known to someone else), with a new recovery key.",
            discussion: """
                A succession: the key in force is retired (nothing verifies under it from then on) \
                and a new one is handed to every other root; a new recovery key is printed once. \
                Paired devices need nothing: they verify the hand-over in the log. If a root may be \
                in someone else's hands, revoke it instead (`trust revoke`), which does this too.

                \(TrustExit.help)
                """
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Flag(help: "Do not draw the recovery key's QR code.") var noQr = false
        @Flag(help: "Print the result as JSON (with the recovery key).") var json = false

        func run() async throws {
            try await TrustExit.run {
                let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                let recoveryKey = try await manager.rotateIdentity()
                try await TrustCommand.printNewKey(recoveryKey, manager: manager, json: json, qr: !noQr)
            }
        }
    }
}

extension TrustCommand {
    /// Prints a new recovery key bound by a succession, with the new identity fingerprint and
    /// head (a succession changes both; the other devices compare them).
    static func printNewKey(_ key: RecoveryKey, manager: DeviceTrustManager, json: Bool, qr: Bool) async throws {
        // The key is bound already: a status that cannot be read must not keep it from being shown.
        let status = try? await manager.status()
        if json {
            try printJSON(
                SyncCLI.Trust.Started(
                    identityFingerprint: status?.identityFingerprint, head: status?.head,
                    trustRoot: status?.isTrustRoot ?? true, recoveryKey: key.revealText()))
            manager.recoveryKeyShown()
            return
        }
        output("The identity key was replaced and handed to the other roots; a new recovery key is bound.")
        if let fingerprint = status?.identityFingerprint {
            output("Identity fingerprint: \(fingerprint) (it changed: compare it on your other devices)")
        }
        try show(key, qr: qr, manager: manager)
    }
}
