import ArgumentParser
import DeviceTrust
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SyncModel

// `trust recover`, `trust reset`, `trust status`.
extension SyncCLI.Trust {
    struct Recover: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "recover",
            abstract: "Make this desktop a trust root with the recovery key, after losing the roots.",
            discussion: """
                The key is read from $SYNC_RECOVERY_KEY, else typed at a prompt that does not \
                echo, else one line of standard input (never from the command line: shells keep \
                history). A mistyped key is refused before any network call. The log is verified \
                whole; the newest backup the key opens must hold the identity key in force, and the \
                log must reach that backup's row and every device's witness. Before anything is \
                written you are shown the log's head, its last entries and every device: compare \
                them with what you know (--yes skips the question, for scripts). Other devices \
                see no change.

                \(TrustExit.help)
                """
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Flag(help: "Do not ask to confirm what was found.") var yes = false
        @Flag(help: "Print the result as JSON.") var json = false

        func run() async throws {
            let text = try readSecretLine(
                environment: "SYNC_RECOVERY_KEY", prompt: "Recovery key: ", what: "recovery key")
            let recoveryKey: RecoveryKey
            do {
                recoveryKey = try RecoveryKey(text: text)
            } catch let error as RecoveryError {
                printError("Error: \(error)")
                throw ExitCode(1)
            }
            let (ask, quiet) = (!yes, json)
            try await TrustExit.run {
                let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                // The names the device rows carry (the server's, unsigned): shown beside the ids.
                let names = Dictionary(
                    ((try? await manager.remote.listDevices()) ?? []).map { ($0.id, $0.name) },
                    uniquingKeysWith: { first, _ in first })
                let fingerprint = try await manager.recover(with: recoveryKey) { preview in
                    if !quiet { TrustCommand.printPreview(preview, names: names) }
                    guard ask else { return true }
                    guard isatty(STDIN_FILENO) == 1 else { return false }
                    print("Make this desktop a trust root of this log? [y/N] ", terminator: "")
                    fflush(nil)
                    let answer = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces).lowercased()
                    return answer == "y" || answer == "yes"
                }
                guard let fingerprint else {
                    throw CLIError(
                        "not confirmed: nothing was written (without a terminal to ask on, add --yes)")
                }
                if json {
                    return try printJSON(Recovered(identityFingerprint: fingerprint.description, trustRoot: true))
                }
                output("Recovered identity \(fingerprint): this device is a trust root.")
                output("Your other devices keep working as they are; pair new ones with `sync-cli trust invite`.")
            }
        }

        struct Recovered: Encodable {
            let identityFingerprint: String
            let trustRoot: Bool
        }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "The last resort: a new identity, when no root and no recovery key is left.",
            discussion: """
                Starts a new epoch of the trust log with this desktop as its root. On a trust root \
                whose log verifies it takes effect at once; on any other desktop it is pending for \
                72 hours, during which any root's sync vetoes it (so a thief with the password \
                cannot take the identity over while a root of yours is alive). Every other device \
                then reports "identity reset" until it is paired again with a code from this one. \
                Needs a sign-in in the last 10 minutes, and asks for the email this store signed \
                in with ($SYNC_CONFIRM_EMAIL, a prompt, or a line of standard input). A reset may \
                be asked for once a day.

                \(TrustExit.help)
                """
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Flag(help: "Bind no recovery key to the new identity.") var noRecoveryKey = false
        @Flag(help: "Do not draw the recovery key's QR code.") var noQr = false
        @Flag(help: "Print the result as JSON (with the recovery key).") var json = false

        func run() async throws {
            try await TrustExit.run {
                let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                if !json { output("This starts a new identity: every other device must be paired again.") }
                let email: String
                if let value = ProcessInfo.processInfo.environment["SYNC_CONFIRM_EMAIL"], !value.isEmpty {
                    email = value
                } else {
                    if isatty(STDIN_FILENO) == 1 { print("Type your email to confirm: ", terminator: "") }
                    guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                        throw CLIError("no confirmation: type the email this store signed in with")
                    }
                    email = line
                }
                guard try await Self.confirms(email, store: manager.local) else {
                    throw CLIError("the email does not match the one this store signed in with; nothing changed")
                }
                let outcome = try await manager.reset(recovery: noRecoveryKey ? .none : .new)
                if json {
                    return try printJSON(
                        ResetResult(
                            identityFingerprint: outcome.fingerprint.description, epoch: outcome.epoch,
                            inEffect: outcome.inEffect,
                            effectiveAt: outcome.effectiveAt.map { Date(timeIntervalSince1970: TimeInterval($0)) },
                            recoveryKey: outcome.recoveryKey?.revealText()))
                }
                if outcome.inEffect {
                    output("A new identity (epoch \(outcome.epoch)) is in effect; this device is its trust root.")
                } else {
                    let when = outcome.effectiveAt.map { TrustCommand.date($0) } ?? "in 72 hours"
                    output(
                        "A new identity (epoch \(outcome.epoch)) was asked for: it takes effect on \(when) unless a trust root vetoes it."
                    )
                }
                output("Identity fingerprint: \(outcome.fingerprint)")
                if let recoveryKey = outcome.recoveryKey { try TrustCommand.show(recoveryKey, qr: !noQr) }
                if outcome.inEffect {
                    output("Pair your other devices again: `sync-cli trust invite` here, `sync-cli trust join` there.")
                } else {
                    // Nothing is true yet of the new identity: no invite can be made from it.
                    output(
                        "Until then nothing changes: every device keeps the identity in force, and `sync-cli trust status` "
                            + "here shows the reset pending. If no root vetoes it, this desktop's first sync after that "
                            + "makes it the new identity's root; then pair your other devices again (`sync-cli trust "
                            + "invite` here, `sync-cli trust join` there). A root's sync vetoes it, and this desktop's "
                            + "next sync says so.")
                }
            }
        }

        struct ResetResult: Encodable {
            let identityFingerprint: String
            let epoch: UInt32
            let inEffect: Bool
            let effectiveAt: Date?
            let recoveryKey: String?
        }

        /// Whether `typed` is the email this store signed in with: the Supabase session's, or
        /// on the embedded remote the one its user id was derived from.
        static func confirms(_ typed: String, store: DeviceStore) async throws -> Bool {
            let email = typed.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
            guard !email.isEmpty else { return false }
            if let session = try store.authSessionFile.load(), let known = session.email {
                return known.lowercased() == email
            }
            return try await store.requireIdentity().userID == SyncCLI.Login.embeddedUser(email: email)
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract:
                "The trust log's head (compare it across devices), the roots, and every device: verified, unverified, revoked or key-mismatch.",
            discussion: TrustExit.help
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Flag(help: "Print the status as JSON.") var json = false

        func run() async throws {
            try await TrustExit.run {
                let manager = try await TrustCommand.manager(storeOptions, remoteOptions, reading: true)
                let status = try await manager.status()
                if json { return try printJSON(status) }
                switch status.mode {
                case "log":
                    output(
                        "Identity fingerprint: \(status.identityFingerprint ?? "?")\(status.isTrustRoot ? " (this device is a trust root)" : "")"
                    )
                    if let head = status.head {
                        let when = status.headCreatedAt.map { " (written \(JSONStyle.date($0)))" } ?? ""
                        output("Trust log head: \(head)\(when)")
                    }
                    output("This device: \(status.thisDevice?.rawValue ?? "unverified")")
                case "legacy":
                    output("Identity fingerprint: \(status.identityFingerprint ?? "?") (legacy: no trust log yet)")
                    output("This device: \(status.thisDevice?.rawValue ?? "unverified")")
                default:
                    output(
                        "Not paired: run `sync-cli trust init` on the first desktop, or `sync-cli trust join` here (with a code from `trust invite` on a root)."
                    )
                }
                for device in status.devices {
                    let me = (device.isThisDevice ? " (this device)" : "") + (device.isRoot ? " (trust root)" : "")
                    let active = device.isActive ? "" : " inactive"
                    output(
                        "\(device.deviceID.canonical)  \(device.name)\(me)  [\(device.deviceType ?? "?")\(active)]  \(device.status?.rawValue ?? "-")"
                    )
                }
                for problem in status.problems { output("  ! \(problem)") }
            }
        }
    }
}

extension TrustCommand {
    /// What a recovery found, before it writes anything.
    /// The log a recovery would pin, each device with the name its row carries.
    static func printPreview(_ preview: DeviceTrustManager.RecoveryPreview, names: [UUID: String]) {
        output("The trust log this recovery would pin:")
        output("  head: \(preview.head), written \(date(preview.headCreatedAt))")
        for entry in preview.lastEntries {
            output("  seq \(entry.seq): \(entry.type), \(date(entry.createdAt))")
        }
        output("  devices:")
        for device in preview.devices {
            let root = device.isRoot ? " (trust root)" : ""
            let name = names[device.deviceID].map { "\(oneLine($0))  " } ?? ""
            output(
                "    \(name)[\(device.deviceType ?? "?")]  \(device.deviceID.canonical)  \(device.status?.rawValue ?? "-")\(root)"
            )
        }
        if preview.skippedBackups > 0 {
            output("  (\(preview.skippedBackups) newer backups did not open and were skipped)")
        }
    }

    /// A Unix time as RFC 3339 UTC.
    static func date(_ seconds: UInt64) -> String {
        JSONStyle.date(Date(timeIntervalSince1970: TimeInterval(min(seconds, 1 << 40))))
    }
}
