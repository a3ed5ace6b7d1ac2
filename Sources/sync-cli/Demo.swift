import ArgumentParser
import Foundation
import SecretCrypto

extension SyncCLI {
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the engine's main job, step by step, on throwaway keys.",
            discussion: """
                Today: two device key pairs are made, a fresh session secret is sealed for one \
                device and opened by it, and the other device is shown to be unable to open it. \
                Nothing is written to disk or sent anywhere; no secret is printed.
                """
        )

        func run() async throws {
            let sessionID = SessionID(UUID())
            print("1. Desktop and phone each generate an X25519 device key pair")
            let desktop = X25519PrivateKey()
            let phone = X25519PrivateKey()
            print("   desktop public key \(desktop.publicKey.base64)")
            print("   phone   public key \(phone.publicKey.base64)")

            print("2. Desktop starts session \(sessionID) with a fresh 32-byte secret")
            let secret = SessionSecret()

            print("3. Desktop seals the secret to the phone's public key (envelope v1)")
            let envelope = try SecretEnvelope.seal(secret, for: phone.publicKey, sessionID: sessionID)
            print("   ephemeral_public_key \(envelope.ephemeralPublicKey)")
            print("   encrypted_secret     \(envelope.encryptedSecret.prefix(24))... (\(try SecretEnvelope.decodeEncryptedSecret(envelope.encryptedSecret).count) bytes)")

            print("4. Phone opens the envelope with its private key")
            let opened = try envelope.open(sessionID: sessionID, using: phone)
            let matched = opened == secret
            print("   secret matches the desktop's: \(matched ? "yes" : "NO")")

            print("5. The desktop's own key cannot open an envelope sealed to the phone")
            let refused: Bool
            do {
                _ = try envelope.open(sessionID: sessionID, using: desktop)
                refused = false
            } catch {
                refused = true
            }
            print("   refused: \(refused ? "yes" : "NO")")

            print(matched && refused ? "Summary: 1 envelope sealed, 1 opened, secret matched." : "Summary: FAILED")
            if !(matched && refused) { throw ExitCode.failure }
        }
    }
}
