import ArgumentParser
import Foundation
import LocalStore
import PostLoginSync
import RemoteSelection
import RemoteStore
import SecretCrypto
import SyncModel

extension SyncCLI {
    struct Login: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "login", abstract: "Sign this store in to the remote.",
            discussion: """
                Supabase (--remote https://PROJECT.supabase.co): a password grant with --email; the \
                password comes from $SYNC_PASSWORD or standard input (never a flag), the apikey from \
                $SUPABASE_ANON_KEY. The tokens are kept in <store>/auth.json (0600) and refreshed \
                automatically. With $SYNC_ACCESS_TOKEN set, that token is used as it is (no refresh).

                Embedded remote (--remote embedded:PATH, the default): there is no password; the \
                user id is --user, or derived from --email so that every device logging in with the \
                same email shares one user.
                """
        )

        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions

        @Option(help: "The account's email (default: $SYNC_EMAIL).")
        var email: String?

        @Option(help: "Embedded remote only: the user id to sign in as.")
        var user: String?

        @Flag(help: "Print the user and the remote as JSON.") var json = false

        func run() async throws {
            let store = try await storeOptions.open()
            let identity = try await store.requireIdentity()
            let configuration = try await remoteOptions.configuration(for: store)
            let address = configuration.address
            let email = self.email ?? ProcessInfo.processInfo.environment["SYNC_EMAIL"]
            let userID: UUID
            switch configuration.location {
            case .embedded(let path):
                if let user {
                    guard let parsed = UUID.parse(user) else { throw UsageError("--user must be a UUID") }
                    userID = parsed
                } else if let email, !email.isEmpty {
                    userID = Self.embeddedUser(email: email)
                } else {
                    throw UsageError("the embedded remote needs --email or --user")
                }
                // The path is checked now (its directory must exist), not at the first sync.
                _ = try RemoteConfiguration.embedded(path: path, userID: userID, create: true)
            case .supabase(let url):
                if let token = ProcessInfo.processInfo.environment["SYNC_ACCESS_TOKEN"], !token.isEmpty {
                    guard let subject = Self.subject(ofJWT: token) else {
                        throw CLIError("$SYNC_ACCESS_TOKEN is not a JWT with a sub claim")
                    }
                    userID = subject
                } else {
                    guard let email, !email.isEmpty else { throw UsageError("give --email (or set $SYNC_EMAIL)") }
                    let password = try Self.readPassword()
                    let auth = SupabaseAuth(projectURL: url, apiKey: try anonKey())
                    let session = try await auth.signIn(email: email, password: password)
                    try store.authSessionFile.save(session)
                    userID = session.userID
                }
            }
            if let existing = identity.userID, existing != userID {
                throw CLIError(
                    "this store belongs to user \(existing.canonical); use a new store (--store) for another user")
            }
            try await store.setUserID(userID)
            try await store.setSetting(.remoteAddress, address)
            if case .embedded = configuration.location {
                try await store.setSetting(.embeddedSignedInAt, Int64(Date().timeIntervalSince1970))
            }
            if json { return try printJSON(["userId": userID.canonical, "remote": address]) }
            output("Logged in as user \(userID.canonical) on \(Self.shown(address))")
        }

        /// The remote as the login line names it: `embedded:PATH`, or the URL's host with its port.
        static func shown(_ address: String) -> String {
            guard !address.hasPrefix("embedded:"), let url = URL(string: address), let host = url.host else {
                return address
            }
            return url.port.map { "\(host):\($0)" } ?? host
        }

        /// The same user id for the same email, on every device (embedded remote only).
        static func embeddedUser(email: String) -> UUID {
            var bytes = HMACSHA256.authenticationCode(
                for: Array(email.lowercased().utf8),
                using: SecureBytes(copying: Array("session-sync embedded user".utf8)))
            bytes[6] = (bytes[6] & 0x0F) | 0x40
            bytes[8] = (bytes[8] & 0x3F) | 0x80
            return UUID(
                uuid: (
                    bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                    bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                ))
        }

        static func subject(ofJWT token: String) -> UUID? {
            let parts = token.split(separator: ".")
            guard parts.count == 3 else { return nil }
            var payload = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while payload.count % 4 != 0 { payload += "=" }
            guard let data = Data(base64Encoded: payload),
                let claims = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
                let sub = claims["sub"] as? String
            else { return nil }
            return UUID.parse(sub)
        }

        /// The password from $SYNC_PASSWORD, else a prompt without echo on a terminal, else one line of stdin.
        static func readPassword() throws -> String {
            try readSecretLine(environment: "SYNC_PASSWORD", prompt: "Password: ", what: "password")
        }
    }
}
