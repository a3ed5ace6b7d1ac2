import ArgumentParser
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

extension SyncCLI {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status", abstract: "Show this device's identity, the last sync report and row counts.")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Flag(help: "Print the status as JSON (the last report in full).") var json = false

        func run() async throws {
            let store = try await storeOptions.openForReading()
            guard let identity = try await store.identity() else {
                output("No device identity in \(store.directory.path); run `sync-cli init`.")
                throw ExitCode(SyncExit.error)
            }
            if json {
                let counts = try await store.counts()
                let last = try await store.lastReport()
                var object: [String: Any] = [
                    "device": [
                        "id": identity.id.canonical, "name": identity.name, "deviceType": identity.deviceType.rawValue,
                        "role": identity.role.rawValue, "publicKey": identity.publicKey.base64,
                        "keyFingerprint": identity.publicKey.fingerprint,
                        "userId": identity.userID.map { $0.canonical as Any } ?? NSNull(),
                    ] as [String: Any],
                    "remote": try await remoteOptions.address(for: store), "store": store.directory.path,
                    "rows": [
                        "repositories": counts.repositories, "sessions": counts.sessions,
                        "ownSecrets": counts.ownSecrets,
                        "envelopesDistributed": counts.ledgerEntries, "envelopesReceived": counts.receivedEnvelopes,
                    ],
                ]
                if let (text, finished) = last, let report = try? JSONSerialization.jsonObject(with: Data(text.utf8)) {
                    object["lastSync"] =
                        [
                            "finishedAt": ISO8601DateFormatter().string(from: finished), "report": report,
                        ] as [String: Any]
                } else {
                    object["lastSync"] = NSNull()
                }
                let data = try JSONSerialization.data(
                    withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
                return printJSONText(String(decoding: data, as: UTF8.self))
            }
            output("Device      \(identity.name) (\(identity.deviceType.rawValue), \(identity.role.rawValue))")
            output("  id        \(identity.id.canonical)")
            output("  key       \(identity.publicKey.base64) (fingerprint \(identity.publicKey.fingerprint))")
            output("  user      \(identity.userID?.canonical ?? "not logged in")")
            output("  remote    \(try await remoteOptions.address(for: store))")
            output("  store     \(store.directory.path)")
            let counts = try await store.counts()
            output(
                "Rows        \(counts.repositories) repositories, \(counts.sessions) sessions, "
                    + (identity.role == .desktop
                        ? "\(counts.ownSecrets) sealed secrets, \(counts.ledgerEntries) envelopes distributed"
                        : "\(counts.receivedEnvelopes) envelopes received"))
            if let (json, finished) = try await store.lastReport(), let report = SyncReport.decode(json) {
                output(
                    "Last sync   \(report.direction.rawValue) \(report.outcome.rawValue) at \(ISO8601DateFormatter().string(from: finished))"
                )
                SyncRunner.printSummary(report)
            } else {
                output("Last sync   never")
            }
        }
    }
}
