import APNsImitation
import ArgumentParser
import Crypto
import Foundation

/// `apns-imitation`: the tests' APNs imitation as a process, for `make stack` (STACK_PUSH=1) and
/// for trying the push worker by hand. HTTP/2 over TLS on 127.0.0.1, a certificate made at start.
@main
struct APNsImitationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-imitation",
        abstract: "An imitation of APNs on loopback (HTTP/2, TLS) that checks provider tokens and logs every request.")

    @Option(help: "The port (0: any free one).") var port = 0
    @Option(help: "Where to write the certificate (apns-imitation-cert.pem) to trust.") var directory: String
    @Option(name: .customLong("key-path"), help: "The provider's .p8 key, whose public half checks the tokens.")
    var keyPath: String
    @Option(name: .customLong("key-id")) var keyID: String
    @Option(name: .customLong("team-id")) var teamID: String
    @Option(name: .customLong("bundle-id")) var bundleID: String

    func run() async throws {
        guard let pem = try? String(contentsOfFile: keyPath, encoding: .utf8),
            let key = try? P256.Signing.PrivateKey(pemRepresentation: pem)
        else { throw ValidationError("--key-path must name a PKCS#8 P-256 key") }
        let imitation = try await APNsImitation.start(
            options: .init(keyID: keyID, teamID: teamID, bundleID: bundleID, publicKey: key.publicKey),
            directory: URL(fileURLWithPath: directory), port: port)
        imitation.keepLog(false)
        imitation.onRequest { request in
            let type = request.headers["apns-push-type"] ?? "-"
            let line =
                "\(ISO8601DateFormatter().string(from: request.time)) \(request.status) \(request.reason ?? "-") \(type) "
                + "token=…\(request.token.suffix(6)) apns-id=\(request.headers["apns-id"] ?? "-") "
                + "collapse=\(request.headers["apns-collapse-id"] ?? "-") bytes=\(request.body.count)\n"
            FileHandle.standardOutput.write(Data(line.utf8))
        }
        // Unbuffered: a script waits for this line in a file.
        FileHandle.standardOutput.write(
            Data(
                "apns-imitation listening on \(imitation.baseURL.absoluteString) (trust \(imitation.certificateFile))\n"
                    .utf8))
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
