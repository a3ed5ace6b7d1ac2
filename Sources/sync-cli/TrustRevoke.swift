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
                Appends a revocation to the trust log (for ever: no login can take it back), \
                deletes every envelope addressed to the device and marks its row inactive. Every \
                desktop's next push then gives each session the device had a new secret it \
                never receives. A root is revoked with a succession: a new identity key, handed \
                to every other root, so the revoked root's copy stops working; by default a new \
                recovery key too, printed once (--keep-recovery-key keeps the old one, which a \
                recovery may then use to be shown the log as it was before). A device cannot \
                revoke itself: revoke it from another root.

                What revocation does not do: the device keeps what it already received, and \
                it is not signed out. With the user's login it can still read what the server \
                holds in clear: repository names, session titles and statuses. On a Supabase \
                project, `--all-others --end-other-logins` also ends every other login of the \
                user on the auth server (GoTrue logout, scope others): their refresh tokens stop \
                working, and an access token already issued lasts until it expires (an hour by \
                default). It cannot end one device's login alone, and the embedded remote has \
                no logins to end. Change the password too if a device was stolen.

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
        @Flag(help: "Print the result as JSON (with a new recovery key, when one was made).") var json = false

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
                let report: RevocationReport
                if allOthers {
                    report = try await manager.revokeAllOthers(keepRecoveryKey: keepRecoveryKey)
                } else {
                    let known = try await manager.remote.listDevices().map(\.id)
                    let ids = try devices.map { try resolveID($0, among: known, kind: "device") }
                    report = try await manager.revoke(Set(ids), keepRecoveryKey: keepRecoveryKey)
                }
                if endOtherLogins { try await Self.endOtherLogins(address: address, store: manager.local) }
                if json {
                    return try printJSON(
                        Revoked(
                            report: report, otherLoginsEnded: endOtherLogins,
                            recoveryKey: report.recoveryKey?.revealText()))
                }
                if report.revoked.isEmpty { output("Nothing to revoke.") }
                for id in report.revoked { output("Revoked \(id.canonical).") }
                if report.identityKeyReplaced {
                    output("A root was revoked: the identity key was replaced and handed to the other roots.")
                    if let recoveryKey = report.recoveryKey { try TrustCommand.show(recoveryKey, qr: !noQr) }
                }
                if !report.revoked.isEmpty {
                    output(
                        "Deleted \(report.envelopesDeleted) envelopes addressed to them; each desktop's next push rotates the secrets they had."
                    )
                }
                if endOtherLogins {
                    output(
                        "Ended every other login of this user on the auth server: those devices must sign in again once their access token expires."
                    )
                } else if !report.revoked.isEmpty {
                    let hint =
                        address.hasPrefix("embedded:")
                        ? ""
                        : allOthers
                            ? " Run again with --end-other-logins to end their logins too."
                            : " `trust revoke --all-others --end-other-logins` ends every other login."
                    output(
                        "They are not signed out: with the user's login they still read repository names, session titles and statuses.\(hint)"
                    )
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
