import ArgumentParser
import DeviceTrust
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SyncModel

extension TrustMode: ExpressibleByArgument {}
extension DeviceTrustRole: ExpressibleByArgument {}

/// How trust failures leave the program.
enum TrustExit {
    /// The remote's identity key is not the pinned one.
    static let identityChanged: Int32 = 4

    static let help =
        "Exit status: 0 done; 1 refused or failed (the message says why); 4 the user's identity key changed (re-pair)."

    /// Runs `body`, turning a ``SyncError`` into its message and exit status.
    static func run(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as SyncError {
            printError("Error: \(error.message)")
            throw ExitCode(error.code == .identityChanged ? identityChanged : 1)
        }
    }
}

extension SyncCLI {
    struct Trust: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Device trust the client verifies: pair devices by code, see who is verified, revoke.",
            discussion: """
                The first device runs `trust init` and becomes the trust root: it creates the \
                user's identity key (identity.key, 0600) and publishes its public key. Every other \
                device joins with a pairing code the trust root shows (`trust invite`), typed or \
                scanned: `trust join CODE`. The trust root then certifies it (`trust approve`, or \
                `trust invite --wait`). From then on a desktop seals secrets only to devices with a \
                valid certificate (`--trust verified`, the default once an identity is pinned).
                """,
            subcommands: [
                Init.self, Invite.self, Join.self, Approve.self, Status.self, Revoke.self, RecoveryKeyCommand.self,
                Recover.self, Reset.self,
            ]
        )

        struct Init: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract:
                    "Make this device the trust root: create and publish the user's identity key, certify this device.",
                discussion: """
                    Refused when the user already has an identity key: join it instead.

                    Prints a recovery key once: write it down. With it, `trust recover` makes \
                    another desktop of yours a trust root if this one is lost; the server keeps \
                    only a backup it cannot open.

                    \(TrustExit.help)
                    """
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Flag(help: "Store no backup and print no recovery key (the identity cannot be recovered).")
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
                            "Warning: once this device is the trust root, \(cutOff.count) device(s) stop receiving secrets until they are paired:"
                        )
                        for device in cutOff {
                            printError("  \(device.deviceID.canonical)  \(device.name)  [\(device.deviceType ?? "?")]")
                        }
                        printError(
                            "Pair each: `sync-cli trust invite` here, `sync-cli trust join` there. Until then `sync-cli push --trust any` keeps sealing to them (deployed apps that cannot pair need it)."
                        )
                    }
                    let recoveryKey = noRecoveryKey ? nil : RecoveryKey()
                    let fingerprint = try await manager.initialize(recoveryKey: recoveryKey)
                    if json {
                        var object = ["identityFingerprint": fingerprint.description, "trustRoot": "true"]
                        if let recoveryKey { object["recoveryKey"] = recoveryKey.revealText() }
                        return try printJSON(object)
                    }
                    output("This device is now the trust root.")
                    output("Identity fingerprint: \(fingerprint)")
                    if let recoveryKey { try TrustCommand.show(recoveryKey, qr: !noQr) }
                    output(
                        "Pair another device: `sync-cli trust invite` here, then `sync-cli trust join` there (it asks for the code)."
                    )
                }
            }
        }

        struct RecoveryKeyCommand: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "recovery-key",
                abstract: "The recovery key of the identity backup.",
                subcommands: [New.self]
            )

            struct New: AsyncParsableCommand {
                static let configuration = CommandConfiguration(
                    abstract:
                        "Trust root: a new recovery key; the backup is replaced and the old key stops opening it.",
                    discussion: """
                        A copy of the old backup kept elsewhere (a database backup) still opens \
                        with the old key, since the identity is the same; only a new identity cuts \
                        an old key off completely.

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
                        if json { return try printJSON(["recoveryKey": recoveryKey.revealText()]) }
                        output("The identity backup was replaced; the old recovery key no longer opens it.")
                        try TrustCommand.show(recoveryKey, qr: !noQr)
                    }
                }
            }
        }

        struct Reset: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "The last resort: a new identity, when no root and no recovery key is left.",
                discussion: """
                    Removes the user's identity, every certificate and revocation, pending pairings \
                    and the backup, then makes this desktop the trust root of a new identity (and \
                    prints its recovery key). Every other device stops syncing (exit 4, identity \
                    changed) until it is paired again with `trust invite` / `trust join`. Asks for \
                    the email this store signed in with ($SYNC_CONFIRM_EMAIL, a prompt, or a line \
                    of standard input).

                    \(TrustExit.help)
                    """
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Flag(help: "Store no backup and print no recovery key for the new identity.") var noRecoveryKey = false
            @Flag(help: "Do not draw the recovery key's QR code.") var noQr = false
            @Flag(help: "Print the result as JSON (with the recovery key).") var json = false

            func run() async throws {
                try await TrustExit.run {
                    let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                    if !json {
                        output("This removes the identity: every other device must be paired again.")
                    }
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
                    let recoveryKey = noRecoveryKey ? nil : RecoveryKey()
                    let fingerprint = try await manager.reset(recoveryKey: recoveryKey)
                    if json {
                        var object = ["identityFingerprint": fingerprint.description, "trustRoot": "true"]
                        if let recoveryKey { object["recoveryKey"] = recoveryKey.revealText() }
                        return try printJSON(object)
                    }
                    output("A new identity was created; this device is its trust root.")
                    output("Identity fingerprint: \(fingerprint)")
                    if let recoveryKey { try TrustCommand.show(recoveryKey, qr: !noQr) }
                    output("Pair your other devices again: `sync-cli trust invite` here, `sync-cli trust join` there.")
                }
            }

            /// Whether `typed` is the email this store signed in with: the Supabase session's, or
            /// on the embedded remote the one its user id was derived from.
            static func confirms(_ typed: String, store: DeviceStore) async throws -> Bool {
                let email = typed.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
                guard !email.isEmpty else { return false }
                if let session = try store.authSessionFile.load(), let known = session.email {
                    return known.lowercased() == email
                }
                return try await store.requireIdentity().userID == Login.embeddedUser(email: email)
            }
        }

        struct Recover: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make this desktop a trust root again with the recovery key, after losing the root.",
                discussion: """
                    The key is read from $SYNC_RECOVERY_KEY, else typed at a prompt that does not \
                    echo, else one line of standard input (never from the command line: shells \
                    keep history). A mistyped key is refused before any network call. Other \
                    devices see no change: the identity stays the same, so nothing needs re-pairing.

                    \(TrustExit.help)
                    """
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
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
                try await TrustExit.run {
                    let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                    let fingerprint: IdentityFingerprint
                    do {
                        fingerprint = try await manager.recover(with: recoveryKey)
                    } catch let error as RecoveryError {
                        printError("Error: \(error)")
                        throw ExitCode(1)
                    }
                    if json {
                        return try printJSON(["identityFingerprint": fingerprint.description, "trustRoot": "true"])
                    }
                    output("Recovered identity \(fingerprint): this device is a trust root.")
                    output("Your other devices keep working as they are; pair new ones with `sync-cli trust invite`.")
                }
            }
        }

        struct Invite: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Show a pairing code (text and QR) for a new device; valid 10 minutes, single use.",
                discussion: """
                    The code is secret until used: show it only on this screen. With --wait the \
                    command approves the new device itself as soon as it joins.

                    \(TrustExit.help)
                    """
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Option(
                help: ArgumentHelp(
                    "The kind of device being paired (\(DeviceType.allCases.map(\.rawValue).joined(separator: ", "))): its certificate names it, and a device whose row says otherwise is refused. Without it, approval asks you to confirm the type the device's row names.",
                    valueName: "type")) var deviceType: DeviceType?
            @Option(help: "The role certified: trusted_executor (receives secrets) or temporary_viewer (never does).")
            var role: DeviceTrustRole = .trustedExecutor
            @Flag(help: "Wait for the device to join and approve it (until the invite expires).") var wait = false
            @Flag(help: "Do not draw the QR code.") var noQr = false
            @Flag(help: "Print the code as JSON (for a UI that shows it itself).") var json = false

            func run() async throws {
                try await TrustExit.run {
                    let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                    let (code, expiresAt) = try await manager.invite(deviceType: deviceType, role: role)
                    let text = code.revealText()
                    if json {
                        try printJSON([
                            "code": text, "inviteId": code.inviteIDText, "expiresAt": Timestamp.format(expiresAt),
                            "identityFingerprint": code.fingerprint.description,
                        ])
                    } else {
                        output("Pairing code (valid until \(TrustCommand.time(expiresAt)), single use):")
                        output("")
                        output("    \(text)")
                        output("")
                        if !noQr { print(try TerminalQRCode.render(text)) }
                        output("On the new device: sync-cli trust join (type the code at its prompt)")
                        output("Identity fingerprint: \(code.fingerprint)")
                    }
                    guard wait else {
                        if !json { output("Then approve it here: sync-cli trust approve") }
                        return
                    }
                    if !json {
                        output(
                            "Waiting for the device to join (Ctrl-C to stop; the invite stays valid until it expires)..."
                        )
                    }
                    let report = try await manager.waitForJoin(
                        inviteID: code.inviteIDText, confirm: TrustCommand.confirmation()
                    ) { round in
                        if !json { TrustCommand.printApproval(round) }
                    }
                    if json { try printJSON(report) }
                }
            }
        }

        struct Join: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Join the user's identity with a pairing code from the trust root.",
                discussion: """
                    Checks that the identity key the remote publishes is the one the code names \
                    (the server cannot substitute it), pins it, and asks the trust root to certify \
                    this device. Spaces, hyphens and case in the code do not matter.

                    Then it waits for the trust root's answer (`trust approve` there, or `trust \
                    invite --wait`) and says "certified", or that the request was refused (most \
                    often a mistyped code: the trust root's approve prints why), exiting 1. \
                    Joining again once certified is harmless: it says so and asks nothing.

                    The code is read from $SYNC_PAIRING_CODE, else typed at a prompt that does not \
                    echo it, else one line of standard input. Given as an argument it still works, \
                    but other local users can read it in the process list while join runs.

                    \(TrustExit.help)
                    """
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Argument(
                help:
                    "Discouraged: the pairing code as arguments (visible to other local users in `ps`); omit it to be asked."
            )
            var code: [String] = []
            @Flag(help: "Print the result as JSON.") var json = false
            @Flag(help: "Return once the request is made, without waiting for the trust root's answer.")
            var noWait = false
            @Option(help: "Seconds to wait for the trust root's answer (an invite lives 600).")
            var timeout: Int = 600

            func validate() throws {
                guard timeout > 0 else { throw ValidationError("--timeout must be a positive number of seconds") }
            }

            func run() async throws {
                let text: String
                if code.isEmpty {
                    text = try readSecretLine(
                        environment: "SYNC_PAIRING_CODE", prompt: "Pairing code: ", what: "pairing code")
                } else {
                    printError(
                        "Warning: the pairing code was given as an argument, which other local users can read in the process "
                            + "list while this runs; next time omit it and type it at the prompt (or pipe it on standard input)"
                    )
                    text = code.joined()
                }
                let parsed: PairingCode
                do { parsed = try PairingCode(parsing: text) } catch {
                    throw CLIError("\(error); compare it with the code on the trust root's screen and type it again")
                }
                try await TrustExit.run {
                    let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                    if noWait {
                        let fingerprint = try await manager.join(code: parsed)
                        if json {
                            return try printJSON(
                                JoinResult(identityFingerprint: fingerprint.description, outcome: "requested"))
                        }
                        output("Pinned the user's identity \(fingerprint).")
                        output(
                            "Asked the trust root for a certificate: run `sync-cli trust approve` there (or it is waiting with `trust invite --wait`)."
                        )
                        return
                    }
                    if !json {
                        output(
                            "Asked the trust root for a certificate; waiting for its answer (`sync-cli trust approve` there, or `trust invite --wait`)..."
                        )
                    }
                    let outcome = try await manager.joinAndWait(code: parsed, timeout: .seconds(timeout))
                    try Self.report(outcome, json: json)
                }
            }

            /// `trust join --json`.
            struct JoinResult: Encodable {
                let identityFingerprint: String
                /// requested, certified, already-certified, refused, timed-out.
                let outcome: String
            }

            /// Prints the outcome; a refusal or a timeout exits 1 with what to do next.
            static func report(_ outcome: JoinOutcome, json: Bool) throws {
                let (fingerprint, name, message, ok): (IdentityFingerprint, String, String, Bool)
                switch outcome {
                case .certified(let pinned):
                    (fingerprint, name, ok) = (pinned, "certified", true)
                    message =
                        "Certified: this device joined the identity \(pinned). Desktops seal secrets to it from their next push; run `sync-cli sync` after that."
                case .alreadyCertified(let pinned):
                    (fingerprint, name, ok) = (pinned, "already-certified", true)
                    message = "This device is already certified by the identity \(pinned): nothing to do."
                case .refused(let pinned):
                    (fingerprint, name, ok) = (pinned, "refused", false)
                    message =
                        "The trust root refused the request: most often the code was mistyped, or the invite expired or was already used; "
                        + "`sync-cli trust approve` on the trust root printed which. Ask for a new code (`sync-cli trust invite`) and join again."
                case .timedOut(let pinned):
                    (fingerprint, name, ok) = (pinned, "timed-out", false)
                    message =
                        "No answer from the trust root in time: run `sync-cli trust approve` on it (the request stays until the invite expires), "
                        + "then `sync-cli trust status` here."
                }
                if json {
                    try printJSON(JoinResult(identityFingerprint: fingerprint.description, outcome: name))
                } else if ok {
                    output(message)
                }
                if !ok {
                    printError("Error: \(message)")
                    throw ExitCode(1)
                }
            }
        }

        struct Approve: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Trust root: certify the devices that joined with this device's invites.",
                discussion: """
                    Each request's MAC is checked against the invite's pairing secret, which the \
                    server never saw; requests for unknown, expired or used invites, with a wrong \
                    MAC, or whose keys are not the device row's are refused and deleted.

                    The certificate names the device type the invite was opened for \
                    (--device-type); for an invite opened without one you are asked to confirm the \
                    type the device's row names, and without a terminal to ask on the request waits.

                    \(TrustExit.help)
                    """
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Flag(help: "Print the result as JSON.") var json = false

            func run() async throws {
                try await TrustExit.run {
                    let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                    let report = try await manager.approve(confirm: TrustCommand.confirmation())
                    if json { return try printJSON(report) }
                    if report.approved.isEmpty && report.refused.isEmpty && report.pending.isEmpty {
                        output("No pairing requests.")
                    }
                    TrustCommand.printApproval(report)
                }
            }
        }

        struct Status: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract:
                    "The identity fingerprint, this device's certificate, and every device: verified, unverified, revoked or key-mismatch.",
                discussion: TrustExit.help
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Flag(help: "Print the status as JSON.") var json = false

            func run() async throws {
                try await TrustExit.run {
                    let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                    let status = try await manager.status()
                    if json { return try printJSON(status) }
                    if let fingerprint = status.identityFingerprint {
                        output(
                            "Identity fingerprint: \(fingerprint)\(status.isTrustRoot ? " (this device is the trust root)" : "")"
                        )
                        output("This device: \(status.thisDevice?.rawValue ?? "unverified")")
                    } else if !status.remoteHasTrustTables {
                        output(
                            "This remote has no device-trust tables: verified trust needs the device_trust migration (trust mode any)."
                        )
                    } else if status.remoteHasIdentity {
                        output(
                            "No identity pinned here: the user has one; join it with `sync-cli trust join CODE` (code from `trust invite` on the trust root)."
                        )
                    } else {
                        output("No identity yet: run `sync-cli trust init` on the first device.")
                    }
                    if status.identityFingerprint != nil, status.recoveryBackup == false {
                        output(
                            "Warning: no identity backup: if every trust root is lost the identity cannot be recovered; run `sync-cli trust recovery-key new` on a root."
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

        struct Revoke: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract:
                    "Trust root: revoke devices: they receive no more secrets, and desktops rotate the ones they had.",
                discussion: """
                    Publishes a signed revocation, deletes the device's certificate and every \
                    envelope addressed to it, and marks its row inactive. Every desktop's next push \
                    then gives each session the device had a new secret it never receives.

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
            @Flag(help: "Print the result as JSON.") var json = false

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
                        report = try await manager.revokeAllOthers()
                    } else {
                        let known = try await manager.remote.listDevices().map(\.id)
                        let ids = try devices.map { try resolveID($0, among: known, kind: "device") }
                        report = try await manager.revoke(Set(ids))
                    }
                    if endOtherLogins { try await Self.endOtherLogins(address: address, store: manager.local) }
                    if json { return try printJSON(Revoked(report: report, otherLoginsEnded: endOtherLogins)) }
                    if report.revoked.isEmpty { output("Nothing to revoke.") }
                    for id in report.revoked { output("Revoked \(id.canonical).") }
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
            }

            /// GoTrue logout with scope `others`, with this store's login.
            static func endOtherLogins(address: String, store: DeviceStore) async throws {
                guard !address.hasPrefix("embedded:"), let url = URL(string: address) else {
                    throw CLIError("the embedded remote has no auth server: there are no logins to end")
                }
                let auth = SupabaseAuth(projectURL: url, apiKey: try RemoteFactory.anonKey())
                let token: String
                if let given = ProcessInfo.processInfo.environment["SYNC_ACCESS_TOKEN"], !given.isEmpty {
                    token = given
                } else {
                    guard let session = try store.authSessionFile.load() else {
                        throw CLIError("no saved login to act with; run `sync-cli login --remote \(address)`")
                    }
                    token = try await AccessTokens(session: session, auth: auth) { try store.authSessionFile.save($0) }
                        .token(forceRefresh: false)
                }
                try await auth.logout(accessToken: token, scope: .others)
            }
        }
    }
}

enum TrustCommand {
    /// Shows a recovery key once, with what to do with it.
    static func show(_ key: RecoveryKey, qr: Bool) throws {
        output("")
        output("Recovery key (write it down and keep it somewhere safe; it is shown only now):")
        output("")
        output("    \(key.revealText())")
        output("")
        if qr { print(try TerminalQRCode.render(key.revealCompactText())) }
        output("With it, `sync-cli trust recover` makes another of your desktops a trust root if this one is lost.")
    }

    static func manager(_ storeOptions: StoreOptions, _ remoteOptions: RemoteOptions) async throws -> DeviceTrustManager
    {
        let store = try storeOptions.open()
        let remote = try await RemoteFactory.make(address: try await remoteOptions.address(for: store), store: store)
        return DeviceTrustManager(local: store, remote: remote)
    }

    static func printApproval(_ report: ApprovalReport) {
        for device in report.approved { output("Certified \(device.name) (\(device.deviceID.canonical)).") }
        for refused in report.refused {
            output("Refused a request from \(refused.deviceID.canonical): \(refused.reason).")
        }
        for pending in report.pending {
            output(
                "Waiting: \(pending.name) (\(pending.deviceID.canonical)) joined as \(pending.deviceType.rawValue); confirm it by running "
                    + "`sync-cli trust approve` on a terminal, or open the invite with --device-type.")
        }
    }

    /// On a terminal: asks the person to confirm a joining device's type; elsewhere `nil` (the
    /// request waits for an approval that can ask).
    static func confirmation() -> PairingConfirmation? {
        guard isatty(STDIN_FILENO) == 1 else { return nil }
        return { candidate in
            output("\(candidate.name) (\(candidate.deviceID.canonical)) joined with a valid code.")
            output("Certify it as \(candidate.deviceType.rawValue), role \(candidate.role.rawValue)? [y/N] ")
            let answer = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces).lowercased()
            return answer == "y" || answer == "yes"
        }
    }

    static func time(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        return formatter.string(from: date)
    }
}
