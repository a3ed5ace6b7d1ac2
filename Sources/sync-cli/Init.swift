import ArgumentParser
import Foundation
import LocalStore
import SyncModel

extension SyncRole: ExpressibleByArgument {}
extension DeviceType: ExpressibleByArgument {}

extension SyncCLI {
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init", abstract: "Create this device's store and X25519 key pair.",
            discussion: """
                Creates the store directory (0700) with store.sqlite and device.key (the private key, 0600). \
                A desktop owns repositories and sessions and pushes; a mobile device pulls.
                """
        )

        @OptionGroup var storeOptions: StoreOptions

        @Option(help: "desktop (pushes) or mobile (pulls).")
        var role: SyncRole

        @Option(help: "A human name for this device, shown on the user's other devices.")
        var name: String

        @Option(
            help: ArgumentHelp(
                "The remote device_type: \(DeviceType.allCases.map(\.rawValue).joined(separator: ", ")). Default: linux-desktop or ios-phone by role."
            ))
        var deviceType: DeviceType?

        @Option(help: "The hostname to publish (default: this machine's).")
        var hostname: String?

        @Flag(help: "Print the new device as JSON.") var json = false

        /// `init --json`.
        struct Created: Encodable {
            let deviceId: String
            let name: String
            let role: String
            let deviceType: String
            let publicKey: String
            let keyFingerprint: String
            let store: String
        }

        func validate() throws {
            guard !name.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw ValidationError("--name must not be empty")
            }
            if let deviceType, deviceType.isDesktop != (role == .desktop) {
                throw ValidationError("--device-type \(deviceType.rawValue) does not fit --role \(role.rawValue)")
            }
        }

        func run() async throws {
            let store = try await storeOptions.create()
            let type = deviceType ?? (role == .desktop ? .linuxDesktop : .iosPhone)
            let identity = try await store.createIdentity(
                name: name, deviceType: type, hostname: hostname ?? ProcessInfo.processInfo.hostName, role: role)
            if json {
                return try printJSON(
                    Created(
                        deviceId: identity.id.canonical, name: identity.name, role: role.rawValue,
                        deviceType: type.rawValue, publicKey: identity.publicKey.base64,
                        keyFingerprint: identity.publicKey.fingerprint, store: store.directory.path))
            }
            output("Created \(role.rawValue) store at \(store.directory.path)")
            output("  device id    \(identity.id.canonical)")
            output("  device type  \(type.rawValue)")
            output("  public key   \(identity.publicKey.base64)")
            output(HintFlags.apply("Next: `sync-cli login`"))
        }
    }
}
