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
    /// The trust log does not verify, was forked or cut, the identity was reset, or (legacy mode)
    /// the identity key changed: nothing trust-sensitive runs until it is resolved.
    static let identityChanged: Int32 = 4

    static let help =
        "Exit status: 0 done; 1 refused or failed (the message says why); 4 the trust log does not verify, was forked or cut, is stale (no root vouched for it in 72 hours), the identity was reset or changed (re-pair, or compare `trust status` across devices), or this device is not in the user's trust log (`trust join`)."

    /// Whether an engine error is a trust failure (exit 4).
    static func isTrustFailure(_ code: SyncError.Code?) -> Bool {
        guard let code else { return false }
        return [
            .identityChanged, .trustLogInvalid, .trustLogForked, .trustLogTruncated, .trustLogStale, .identityReset,
            .notPaired,
        ].contains(code)
    }

    /// Runs `body`, turning a ``SyncError`` into its message and exit status.
    static func run(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as SyncError {
            printError("Error: \(HintFlags.apply(error.message))")
            throw ExitCode(isTrustFailure(error.code) ? identityChanged : 1)
        } catch let error as RecoveryError {
            printError("Error: \(error)")
            throw ExitCode(1)
        }
    }
}

extension SyncCLI {
    struct Trust: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "trust",
            abstract: "Device trust the client verifies: the trust log, pairing by code, roots, revocation, recovery.",
            discussion: """
                The user's trust is one append-only, hash-chained log that only a trust root (a \
                device holding the identity key in force) can extend, and that every device \
                verifies in full and pins. `trust init` on the first desktop starts it; every \
                other device joins with a pairing code a root shows (`trust invite`, then `trust \
                join` there and `trust approve` here). A desktop seals secrets only to devices the \
                verified log certifies and does not revoke. `trust status` shows the log's head \
                (epoch, seq, hash): the same on every device, or somebody is shown another history.
                """,
            subcommands: [
                Init.self, Invite.self, Join.self, Approve.self, Status.self, Revoke.self, GrantRoot.self,
                RecoveryKeyCommand.self, RotateIdentity.self, Recover.self, Reset.self,
            ]
        )
    }
}

enum TrustCommand {
    /// Shows a recovery key once, with what to do with it. Its QR code is drawn only on a
    /// terminal: in a pipe or a log it would be the key again, in a form nobody reads there.
    /// Prints a new recovery key; with `manager`, forgets the copy it kept until shown.
    static func show(_ key: RecoveryKey, qr: Bool, manager: DeviceTrustManager? = nil) throws {
        let qr = qr && isatty(STDOUT_FILENO) == 1
        output("")
        output("Recovery key (write it down and keep it somewhere safe; it is shown only now):")
        output("")
        output("    \(key.revealText())")
        output("")
        if qr { print(try TerminalQRCode.render(key.revealCompactText())) }
        output("With it, `sync-cli trust recover` makes another of your desktops a trust root if this one is lost.")
        // Printed whole (the QR code included): only now is the kept copy forgotten.
        manager?.recoveryKeyShown()
    }

    /// The trust manager over this store and its remote; `reading` opens a store that cannot be
    /// written read-only (`trust status`).
    static func manager(
        _ storeOptions: StoreOptions, _ remoteOptions: RemoteOptions, reading: Bool = false
    ) async throws -> DeviceTrustManager {
        let store = try await reading ? storeOptions.openForReading() : storeOptions.open()
        let remote = try await remoteOptions.remote(for: store)
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
                    + "`sync-cli trust approve` on a terminal, or `sync-cli trust approve --yes --device-type \(pending.deviceType.rawValue)`."
            )
        }
    }

    /// On a terminal: asks the person to confirm a joining device's type; elsewhere `nil` (the
    /// request waits for an approval that can ask).
    static func confirmation() -> PairingConfirmation? {
        guard isatty(STDIN_FILENO) == 1 else { return nil }
        return { candidate in
            output("\(candidate.name) (\(candidate.deviceID.canonical)) joined with a valid code.")
            output("Certify it as \(candidate.deviceType.rawValue), role \(candidate.role.rawValue)? [y/N] ")
            // The person may take minutes: the wait holds a thread of its own, not the pool's.
            let answer = try? await Blocking.run { readLine(strippingNewline: true) }?
                .trimmingCharacters(in: .whitespaces).lowercased()
            return answer == "y" || answer == "yes"
        }
    }
}
