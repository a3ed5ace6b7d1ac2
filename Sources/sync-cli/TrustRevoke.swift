import ArgumentParser
import DeviceTrust
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SyncModel

extension SyncCLI.Trust {
    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract:
                "Trust root: revoke devices: they receive no more secrets, and desktops rotate the ones they had.",
            discussion: """
                Appends a revocation to the trust log (for ever: no login can take it back). As \
                it stores it, the remote ends the device: its credential proves nothing any more \
                (it reads and writes nothing), the logins it used end, its row becomes inactive \
                and every envelope addressed to it goes. This desktop then pushes, giving each of \
                its sessions the device had a new secret it never receives; every other desktop \
                does so at its next push, and before it asks anything. A root is revoked with a \
                succession: a new identity key, handed \
                to every other root, so the revoked root's copy stops working; by default a new \
                recovery key too, printed once (--keep-recovery-key keeps the old one, which a \
                recovery may then use to be shown the log as it was before). A device cannot \
                revoke itself: revoke it from another root.

                What revocation does not do: the device keeps what it already received, and an \
                access token it already holds lasts until it expires (an hour by default), for \
                reading what any login reads in clear (repository names, session titles). A \
                thief with the password can sign in again and register as a new device, which \
                no desktop with trust verified seals anything to. On a Supabase project, \
                `--all-others --end-other-logins` also ends every other login of the user on the \
                auth server (GoTrue logout, scope others). Change the password too if a device \
                was stolen.

                \(TrustExit.help)
                """
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "Device ids (or unambiguous prefixes) to revoke.") var devices: [String] = []
        @Flag(help: "Revoke every device of the user but this one.") var allOthers = false
        @Flag(
            help:
                "With --all-others on a Supabase project: also end every other login of the user on the auth server."
        )
        var endOtherLogins = false
        @Flag(help: "When a root is revoked: keep the recovery key instead of making a new one.")
        var keepRecoveryKey = false
        @Flag(help: "Do not draw a new recovery key's QR code.") var noQr = false
        @Flag(help: "Do not ask to confirm (for scripts): a revocation is for ever.") var yes = false
        @Flag(help: "Print the result as JSON (with a new recovery key, when one was made).") var json = false

        /// Names what is about to be revoked for ever (and the logins about to end) and asks, on a
        /// terminal; without one, refuses unless `--yes` was given (nothing is done then). The
        /// question goes to standard error, so that `--json` output stays JSON.
        static func confirm(_ targets: [RemoteDevice], ask: Bool, endingLogins: Bool) async throws {
            guard ask, !targets.isEmpty || endingLogins else { return }
            guard isatty(STDIN_FILENO) == 1 else {
                throw CLIError(
                    "trust revoke asks before revoking for ever; without a terminal to ask on, add --yes (nothing was revoked)"
                )
            }
            if !targets.isEmpty {
                printError("Revoke for ever (no login can take it back; each must pair again from a new store):")
            }
            for device in targets {
                // A name is the server's (unsigned) text: one line, whatever it holds.
                printError("  \(oneLine(device.name))  [\(device.deviceType?.rawValue ?? "?")]  \(device.id.canonical)")
            }
            if endingLogins { printError("End every other login of this user on the auth server.") }
            let question = targets.isEmpty ? "End them?" : "Revoke \(counted(targets.count, "device"))?"
            FileHandle.standardError.write(Data("\(question) [y/N] ".utf8))
            // The person may take minutes: the wait holds a thread of its own, not the pool's.
            let answer = try await Blocking.run { readLine(strippingNewline: true) }?
                .trimmingCharacters(in: .whitespaces).lowercased()
            guard answer == "y" || answer == "yes" else { throw CLIError("not confirmed: nothing was revoked") }
        }

        func validate() throws {
            guard allOthers != !devices.isEmpty else {
                throw ValidationError("give device ids or --all-others (not both)")
            }
            if endOtherLogins && !allOthers {
                throw ValidationError(
                    "--end-other-logins needs --all-others: the auth server cannot end one device's login alone")
            }
        }

        func run() async throws {
            try await TrustExit.run {
                let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                let address = try await remoteOptions.address(for: manager.local)
                if endOtherLogins && address.hasPrefix("embedded:") {
                    throw CLIError(
                        "the embedded remote has no auth server: there are no logins to end; run without --end-other-logins"
                    )
                }
                let targets: [RemoteDevice]
                if allOthers {
                    targets = try await manager.otherDevices()
                } else {
                    let known = try await manager.remote.listDevices()
                    let ids = Set(try devices.map { try resolveID($0, among: known.map(\.id), kind: "device") })
                    targets = known.filter { ids.contains($0.id) }
                }
                try await Self.confirm(targets, ask: !yes, endingLogins: endOtherLogins)
                let report =
                    targets.isEmpty
                    ? RevocationReport()
                    : try await manager.revoke(Set(targets.map(\.id)), keepRecoveryKey: keepRecoveryKey)
                if endOtherLogins { try await Self.endOtherLogins(address: address, store: manager.local) }
                if json {
                    try printJSON(
                        Revoked(
                            report: report, otherLoginsEnded: endOtherLogins,
                            recoveryKey: report.recoveryKey?.revealText()))
                    if report.recoveryKey != nil { manager.recoveryKeyShown() }
                    return
                }
                if report.revoked.isEmpty { output("Nothing to revoke.") }
                for id in report.revoked { output("Revoked \(id.canonical).") }
                if report.identityKeyReplaced {
                    output("A root was revoked: the identity key was replaced and handed to the other roots.")
                    if let recoveryKey = report.recoveryKey {
                        try TrustCommand.show(recoveryKey, qr: !noQr, manager: manager)
                    }
                }
                if !report.revoked.isEmpty {
                    output(
                        "The remote ended them: their credentials, their logins, the envelopes addressed to them.")
                    if let problem = report.rotationProblem {
                        output(
                            "This desktop's sessions are not rotated yet (\(problem)): run `sync-cli push`; "
                                + "every other desktop rotates at its next push.")
                    } else {
                        output(
                            "Rotated \(report.sessionsRotated) of this desktop's sessions; every other desktop rotates "
                                + "at its next push.")
                    }
                }
                if endOtherLogins {
                    output(
                        "Ended every other login of this user on the auth server: those devices must sign in again once their access token expires."
                    )
                } else if !report.revoked.isEmpty, !address.hasPrefix("embedded:") {
                    output(
                        "An access token they already hold lasts until it expires."
                            + (allOthers
                                ? " Run again with --end-other-logins to end every other login on the auth server too."
                                : " `trust revoke --all-others --end-other-logins` ends every other login."))
                }
            }
        }

        /// `trust revoke --json`.
        struct Revoked: Encodable {
            let report: RevocationReport
            let otherLoginsEnded: Bool
            let recoveryKey: String?
        }

        /// GoTrue logout with scope `others`, with this store's login.
        static func endOtherLogins(address: String, store: DeviceStore) async throws {
            guard !address.hasPrefix("embedded:"), let url = URL(string: address) else {
                throw CLIError("the embedded remote has no auth server: there are no logins to end")
            }
            let auth = SupabaseAuth(projectURL: url, apiKey: try anonKey())
            let token: String
            if let given = ProcessInfo.processInfo.environment["SYNC_ACCESS_TOKEN"], !given.isEmpty {
                token = given
            } else {
                guard let session = try store.authSessionFile.load() else {
                    throw CLIError("no saved login to act with; run `sync-cli login --remote \(address)`")
                }
                token = try await AccessTokens(file: store.authSessionFile, session: session, auth: auth)
                    .token(forceRefresh: false)
            }
            try await auth.logout(accessToken: token, scope: .others)
        }
    }

    struct GrantRoot: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "grant-root",
            abstract: "Trust root: make another certified desktop a trust root too (at most 9).",
            discussion: """
                Appends a root grant: the identity key in force, sealed to the desktop's certified \
                key, which it opens at its next sync. A root can pair, revoke and recover; keep \
                more than one, so that losing a desktop loses nothing.

                \(TrustExit.help)
                """
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The desktop's device id (or an unambiguous prefix).") var device: String
        @Flag(help: "Print the result as JSON.") var json = false

        func run() async throws {
            try await TrustExit.run {
                let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                let known = try await manager.remote.listDevices().map(\.id)
                let id = try resolveID(device, among: known, kind: "device")
                let head = try await manager.grantRoot(id)
                if json { return try printJSON(Granted(deviceId: id, head: head)) }
                output("Granted the root to \(id.canonical); it acts as one after its next sync.")
                output("Trust log head: \(head)")
            }
        }

        struct Granted: Encodable {
            let deviceId: UUID
            let head: TrustLogPosition
        }
    }
}
