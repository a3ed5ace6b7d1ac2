import ArgumentParser
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

extension SyncCLI {
    struct Secrets: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "secrets", abstract: "Session secrets.", subcommands: [Show.self])

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "show", abstract: "Open a session's secret with this device's key.",
                discussion:
                    "Without --reveal only whether it opens is printed. With --reveal the secret's text form is printed: treat the terminal as sensitive."
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Argument(help: "The session's id or an unambiguous prefix of at least 8 characters.") var session: String
            @Flag(help: "Print the secret itself.") var reveal = false
            @Option(help: "An earlier generation of the secret (after a rotation); default: the current one.")
            var generation: UInt32?
            @Flag(help: "Print what is known about the secret as JSON (never the secret, even with --reveal).")
            var json = false

            func validate() throws {
                if json && reveal { throw ValidationError("--json never prints the secret; drop --reveal") }
            }

            /// `secrets show --json`: whether it opens, its generation and who sealed it.
            struct Shown: Encodable {
                let sessionId: String
                let generation: UInt32
                let generationsHeld: [UInt32]
                let opens: Bool
                /// Phone: the envelope's version (1 or 2) and whether its sealer was authenticated.
                let envelopeVersion: Int?
                let authenticated: Bool?
                let senderDeviceId: String?
                /// Phone: whether this device has since verified the sealer's revocation (the
                /// secret was authenticated when it arrived; its sealer is no longer trusted).
                let senderRevoked: Bool?
            }

            func run() async throws {
                let store = try await storeOptions.openForReading()
                let identity = try await store.requireIdentity()
                let id = try resolveID(
                    session, among: try await store.sessions().map(\.id), kind: "session", minimumPrefix: 8)
                let generations = try await store.secretGenerations(sessionID: id)
                let others = generations.filter { $0 != generation }
                let also =
                    others.isEmpty ? "" : " Generations held: \(generations.map(String.init).joined(separator: ", "))."
                if identity.role == .desktop {
                    let sealed = try await store.ownSealedSecret(sessionID: id, generation: generation)
                    let secret = try await store.openOwnSecret(sessionID: id, generation: sealed.generation)
                    if json {
                        return try printJSON(
                            Shown(
                                sessionId: id.canonical, generation: sealed.generation, generationsHeld: generations,
                                opens: true,
                                envelopeVersion: nil, authenticated: nil, senderDeviceId: nil, senderRevoked: nil))
                    }
                    if reveal {
                        print(secret.revealTextForm())
                        return
                    }
                    output(
                        "The secret of session \(id.canonical), generation \(sealed.generation), opens with this device's key (use --reveal to print it).\(also)"
                    )
                    return
                }
                let opened: OpenedSecret
                do {
                    opened = try await store.openReceived(sessionID: id, generation: generation)
                } catch let error as LocalStoreError where error.code == .notFound && generation == nil {
                    throw CLIError(try await whyMissing(id, store: store))
                }
                let revocation = try await store.knownRevocations().first {
                    opened.senderDeviceID != nil && $0.deviceID == opened.senderDeviceID
                }
                if json {
                    return try printJSON(
                        Shown(
                            sessionId: id.canonical, generation: opened.generation, generationsHeld: generations,
                            opens: true,
                            envelopeVersion: opened.version, authenticated: opened.authenticated,
                            senderDeviceId: opened.senderDeviceID?.canonical,
                            senderRevoked: opened.senderDeviceID == nil ? nil : revocation != nil))
                }
                if reveal {
                    print(opened.secret.revealTextForm())
                    return
                }
                let sender = opened.senderDeviceID?.canonical ?? "?"
                let origin =
                    !opened.authenticated
                    ? "envelope v1, generation \(opened.generation): unauthenticated (it names no sender: any writer of the secrets table could have planted it)"
                    : revocation.map {
                        "envelope v2, sealed by device \(sender), generation \(opened.generation): authenticated when it arrived, "
                            + "but that device was revoked on \(ISO8601DateFormatter().string(from: $0.revokedAt)) and is no longer trusted"
                    }
                        ?? "envelope v2, sealed by device \(sender) (authenticated), generation \(opened.generation)"
                output(
                    "The secret of session \(id.canonical) opens with this device's key; \(origin) (use --reveal to print it).\(also)"
                )
            }

            /// Why this phone holds no envelope for the session: not paired, refused by the last
            /// pull, or not pushed yet, each with its next step. The remote is asked for this
            /// device's standing; when it cannot be reached, the message says so.
            func whyMissing(_ id: UUID, store: DeviceStore) async throws -> String {
                do {
                    let remote = try await remoteOptions.remote(for: store)
                    let manager = DeviceTrustManager(local: store, remote: remote)
                    return try await manager.missingEnvelopeReason(sessionID: id).explanation(sessionID: id)
                } catch {
                    return
                        "This device has no secret for session \(id.canonical), and the remote could not be asked why "
                        + "(\(error)). Check the remote (`sync-cli status`), then run `sync-cli sync`."
                }
            }
        }
    }
}
