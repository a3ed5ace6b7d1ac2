import ArgumentParser
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

extension SyncCLI {
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
            @Option(help: "An earlier generation of the secret (after a rotation); default: the current one.") var generation: UInt32?

            func run() async throws {
                let store = try storeOptions.open()
                let identity = try await store.requireIdentity()
                let id = try resolveID(session, among: try await store.sessions().map(\.id), kind: "session")
                let generations = try await store.secretGenerations(sessionID: id)
                let others = generations.filter { $0 != generation }
                let also = others.isEmpty ? "" : " Generations held: \(generations.map(String.init).joined(separator: ", "))."
                if identity.role == .desktop {
                    let sealed = try await store.ownSealedSecret(sessionID: id, generation: generation)
                    let secret = try await store.openOwnSecret(sessionID: id, generation: sealed.generation)
                    if reveal { print(secret.revealTextForm()); return }
                    output("The secret of session \(id.canonical), generation \(sealed.generation), opens with this device's key (use --reveal to print it).\(also)")
                    return
                }
                let opened = try await store.openReceived(sessionID: id, generation: generation)
                if reveal { print(opened.secret.revealTextForm()); return }
                let origin = opened.authenticated
                    ? "envelope v2, sealed by device \(opened.senderDeviceID?.canonical ?? "?") (authenticated), generation \(opened.generation)"
                    : "envelope v1, generation \(opened.generation): UNAUTHENTICATED, its sender is not known (any writer of the secrets table could have planted it)"
                output("The secret of session \(id.canonical) opens with this device's key; \(origin) (use --reveal to print it).\(also)")
            }
        }
    }
}
