import ArgumentParser
import DeviceTrust
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SyncModel

extension SyncCLI.Trust {
    struct Invite: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "invite",
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
                        "code": text, "inviteId": code.inviteIDText, "expiresAt": JSONStyle.date(expiresAt),
                        "identityFingerprint": code.fingerprint.description,
                    ])
                } else {
                    output("Pairing code (valid until \(JSONStyle.date(expiresAt)), single use):")
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
            commandName: "join", abstract: "Join the user's identity with a pairing code from the trust root.",
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
            // Checked offline: a mistyped code never reaches the server.
            do { parsed = try PairingCode(parsing: text) } catch { throw CLIError("\(error)") }
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
            commandName: "approve", abstract: "Trust root: certify the devices that joined with this device's invites.",
            discussion: """
                Each request's MAC is checked against the invite's pairing secret, which the \
                server never saw; requests for unknown, expired or used invites, with a wrong \
                MAC, or whose keys are not the device row's are refused and deleted.

                The certificate names the device type the invite was opened for \
                (`trust invite --device-type`); for an invite opened without one you are asked \
                to confirm the type the device's row names. Without a terminal to ask on, such a \
                request waits, and the command exits 1 while any does; scripts confirm with \
                --yes, or --yes --device-type TYPE to certify only devices of that type \
                (refusing any other).

                \(TrustExit.help)
                """
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Flag(
            help:
                "Certify without asking each device that joined an invite opened without a type, as the type its row names (for scripts)."
        ) var yes = false
        @Option(
            help: ArgumentHelp(
                "With --yes: certify only devices whose row names this type (\(DeviceType.allCases.map(\.rawValue).joined(separator: ", "))); any other is refused, as answering no would.",
                valueName: "type")) var deviceType: DeviceType?
        @Flag(help: "Print the result as JSON.") var json = false

        func validate() throws {
            if deviceType != nil, !yes { throw ValidationError("--device-type goes with --yes") }
        }

        func run() async throws {
            try await TrustExit.run {
                let manager = try await TrustCommand.manager(storeOptions, remoteOptions)
                let only = deviceType
                let confirm: PairingConfirmation? =
                    yes
                    ? { @Sendable candidate in only == nil || candidate.deviceType == only }
                    : TrustCommand.confirmation()
                let report = try await manager.approve(confirm: confirm)
                // Every request it saw was refused: nothing was approved, which is a failure.
                if json {
                    try printJSON(report)
                } else {
                    if report.approved.isEmpty && report.refused.isEmpty && report.pending.isEmpty {
                        output("No pairing requests.")
                    }
                    TrustCommand.printApproval(report)
                }
                if !report.refused.isEmpty && report.approved.isEmpty && report.pending.isEmpty { throw ExitCode(1) }
                // Requests left waiting: not done, whatever was approved beside them.
                if !report.pending.isEmpty {
                    let count = report.pending.count
                    printError(
                        "\(count) pairing request\(count == 1 ? "" : "s") still wait\(count == 1 ? "s" : "") for confirmation: run `sync-cli trust approve` on a terminal, or `sync-cli trust approve --yes`."
                    )
                    throw ExitCode(1)
                }
            }
        }
    }

}
