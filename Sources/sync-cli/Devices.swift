import ArgumentParser
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

extension SyncCLI {
    struct Devices: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The user's devices.", subcommands: [List.self])

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List the user's devices: online or when last seen (15 s window), which receive secrets, and why the others do not."
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
                let now = Date()
                let presence = Dictionary(devices.map { ($0.id, $0.presence(now: now).text(now: now)) }, uniquingKeysWith: { first, _ in first })
                for decision in decisions {
                    let me = decision.deviceID == identity.id ? " (this device)" : ""
                    let format = (decision.envelopeVersions ?? [1]).contains(2) ? "v2" : "v1"
                    let verdict = decision.receives ? "receives secrets (envelope \(format))" : "no: \(decision.reason ?? "")"
                    let seen = presence[decision.deviceID] ?? "never seen"
                    output("\(decision.deviceID.canonical)  \(decision.name)\(me)  [\(decision.deviceType ?? "?")]  \(seen)  \(verdict)")
                }
            }
        }
    }
}
