import ArgumentParser
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

extension SyncCLI {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show this device's identity, the last sync report and row counts.")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions

        func run() async throws {
            let store = try storeOptions.open()
            guard let identity = try await store.identity() else {
                output("No device identity in \(store.directory.path); run `sync-cli init`.")
                throw ExitCode(SyncExit.error)
            }
            output("Device      \(identity.name) (\(identity.deviceType.rawValue), \(identity.role.rawValue))")
            output("  id        \(identity.id.canonical)")
            output("  key       \(identity.publicKey.base64) (fingerprint \(identity.publicKey.fingerprint))")
            output("  user      \(identity.userID?.canonical ?? "not logged in")")
            output("  remote    \(try await remoteOptions.address(for: store))")
            output("  store     \(store.directory.path)")
            let counts = try await store.counts()
            output("Rows        \(counts.repositories) repositories, \(counts.sessions) sessions, "
                  + (identity.role == .desktop ? "\(counts.ownSecrets) sealed secrets, \(counts.ledgerEntries) envelopes distributed"
                                               : "\(counts.receivedEnvelopes) envelopes received"))
            if let (json, finished) = try await store.lastReport(), let report = SyncReport.decode(json) {
                output("Last sync   \(report.direction) \(report.outcome.rawValue) at \(ISO8601DateFormatter().string(from: finished))")
                SyncRunner.printSummary(report)
            } else {
                output("Last sync   never")
            }
        }
    }

    struct Devices: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The user's devices.", subcommands: [List.self])

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List the user's devices: which receive secrets, and why the others do not."
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Flag(help: "Apply the policy as `push --require-trusted` would.") var requireTrusted = false
            @Flag(help: "Apply the policy as `push --exclude-self` would.") var excludeSelf = false

            func run() async throws {
                let store = try storeOptions.open()
                let identity = try await store.requireIdentity()
                let remote = try await RemoteFactory.make(address: try await remoteOptions.address(for: store), store: store)
                let devices = try await remote.listDevices()
                let decisions = RecipientPolicy.evaluate(devices, userID: remote.userID, selfID: identity.id,
                                                         options: RecipientOptions(requireTrusted: requireTrusted, includeSelf: !excludeSelf))
                if decisions.isEmpty { output("No devices registered yet.") }
                for decision in decisions {
                    let me = decision.deviceID == identity.id ? " (this device)" : ""
                    let verdict = decision.receives ? "receives secrets" : "no: \(decision.reason ?? "")"
                    output("\(decision.deviceID.canonical)  \(decision.name)\(me)  [\(decision.deviceType ?? "?")]  \(verdict)")
                }
            }
        }
    }

    struct Secrets: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Session secrets.", subcommands: [Show.self])

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Open a session's secret with this device's key.",
                discussion: "Without --reveal only whether it opens is printed. With --reveal the secret's text form is printed: treat the terminal as sensitive."
            )
            @OptionGroup var storeOptions: StoreOptions
            @Argument(help: "The session's id or an unambiguous prefix.") var session: String
            @Flag(help: "Print the secret itself.") var reveal = false

            func run() async throws {
                let store = try storeOptions.open()
                let identity = try await store.requireIdentity()
                let id = try resolveID(session, among: try await store.sessions().map(\.id), kind: "session")
                let secret = identity.role == .desktop
                    ? try await store.openOwnSecret(sessionID: id)
                    : try await store.openReceivedSecret(sessionID: id)
                if reveal {
                    print(secret.revealTextForm())
                } else {
                    output("The secret of session \(id.canonical) opens with this device's key (use --reveal to print it).")
                }
            }
        }
    }
}
