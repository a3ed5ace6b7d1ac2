import ArgumentParser
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

extension SyncCLI {
    struct Devices: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "devices", abstract: "The user's devices.", subcommands: [List.self])

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract:
                    "List the user's devices: online or when last seen (15 s window), which receive secrets, and why the others do not."
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Option(
                help: ArgumentHelp(
                    "Apply the policy as `push --trust MODE` would (default: as push would).", valueName: "mode"))
            var trust: TrustMode?
            @Flag(help: "Apply the policy as `push --require-trusted` would.") var requireTrusted = false
            @Flag(help: "Apply the policy as `push --exclude-self` would.") var excludeSelf = false
            @Flag(help: "Print the devices as JSON.") var json = false

            func run() async throws {
                let store = try await storeOptions.open()
                let identity = try await store.requireIdentity()
                let remote = try await remoteOptions.remote(for: store)
                let devices = try await remote.listDevices()
                let snapshot: TrustSnapshot?
                do {
                    snapshot = try await TrustSnapshot.load(local: store, remote: remote)
                } catch let error as SyncError {
                    printError("Error: \(HintFlags.apply(error.message))")
                    throw ExitCode(TrustExit.isTrustFailure(error.code) ? TrustExit.identityChanged : 1)
                }
                let options = RecipientOptions(trust: requireTrusted ? .flagged : trust, includeSelf: !excludeSelf)
                let decisions = RecipientPolicy.evaluate(
                    devices, userID: remote.userID, selfID: identity.id, options: options,
                    trust: snapshot, selfKey: identity.publicKey)
                let mode = RecipientPolicy.mode(options, hasPinnedIdentity: snapshot != nil)
                let now = Date()
                if json {
                    let byID = Dictionary(devices.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
                    return try printJSON(
                        DeviceListJSON(
                            trustMode: mode.rawValue,
                            devices: decisions.map { decision in
                                DeviceListJSON.Device(
                                    id: decision.deviceID.canonical, name: decision.name,
                                    deviceType: decision.deviceType,
                                    thisDevice: decision.deviceID == identity.id,
                                    lastSeenAt: byID[decision.deviceID]?.lastSeenAt,
                                    online: byID[decision.deviceID].map { $0.presence(now: now) == .online } ?? false,
                                    trust: decision.trust.map { "\($0)" }, receivesSecrets: decision.receives,
                                    envelopeVersion: decision.receives
                                        ? ((decision.envelopeVersions ?? [1]).contains(2) ? 2 : 1) : nil,
                                    reason: decision.reason)
                            }))
                }
                if decisions.isEmpty { output("No devices registered yet.") }
                let receiving = decisions.filter(\.receives).count
                let unverified = decisions.filter { $0.trust != nil && $0.trust != .verified }.count
                output(
                    "Trust mode \(mode.rawValue): \(receiving) of \(decisions.count) devices receive secrets"
                        + (snapshot == nil
                            ? " (no identity pinned: every qualifying device receives)"
                            : "; \(unverified) not verified"))
                let presence = Dictionary(
                    devices.map { ($0.id, $0.presence(now: now).text(now: now)) },
                    uniquingKeysWith: { first, _ in first })
                for decision in decisions {
                    let me = decision.deviceID == identity.id ? " (this device)" : ""
                    let format = (decision.envelopeVersions ?? [1]).contains(2) ? "v2" : "v1"
                    let verdict =
                        decision.receives ? "receives secrets (envelope \(format))" : "no: \(decision.reason ?? "")"
                    let standing = decision.trust.map { "  \($0)" } ?? ""
                    let seen = presence[decision.deviceID] ?? "never seen"
                    output(
                        "\(decision.deviceID.canonical)  \(decision.name)\(me)  [\(decision.deviceType ?? "?")]  \(seen)\(standing)  \(verdict)"
                    )
                }
            }
        }
    }
}

/// `devices list --json`.
struct DeviceListJSON: Encodable {
    struct Device: Encodable {
        var id: String
        var name: String
        var deviceType: String?
        var thisDevice: Bool
        var lastSeenAt: Date?
        var online: Bool
        var trust: String?
        var receivesSecrets: Bool
        var envelopeVersion: Int?
        var reason: String?
    }
    var trustMode: String
    var devices: [Device]
}
