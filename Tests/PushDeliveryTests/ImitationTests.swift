import APNsImitation
import Crypto
import Foundation
import PushDelivery
import TestStack
import Testing

/// The APNs imitation checks what APNs checks: the tests above rely on it.
@Suite struct ImitationTests {
    static let keyID = "ABC123DEFG"
    static let teamID = "TEAM123456"

    func start(
        _ key: P256.Signing.PrivateKey, certificateNames: String? = nil
    ) async throws -> (APNsImitation, HTTP2APNsTransport, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imitation-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var options = APNsImitation.Options(
            keyID: Self.keyID, teamID: Self.teamID, bundleID: "com.x", publicKey: key.publicKey)
        if let certificateNames { options.certificateNames = certificateNames }
        let imitation = try await APNsImitation.start(options: options, directory: directory)
        return (
            imitation, try HTTP2APNsTransport(caFile: imitation.certificateFile, connectTimeout: Waiting.ceiling),
            directory
        )
    }

    func request(
        token: String = String(repeating: "0a", count: 32), provider: String, type: PushType = .background
    )
        throws -> APNsRequest
    {
        let row = OutboxRow(
            id: 1, token: token, pushType: type, priority: 10, collapseID: nil, payload: #"{"aps":{}}"#, apnsID: UUID(),
            expiresAt: nil, createdAt: Date(), attempts: 1, environment: "production")
        return try APNsRequest.make(row: row, bundleID: "com.x", providerToken: provider)
    }

    @Test func oneStreamPerConnectionUntilAValidProviderToken() async throws {
        let key = P256.Signing.PrivateKey()
        let (imitation, transport, directory) = try await start(key)
        let forged = try await ProviderTokens(
            key: ProviderKey(key: P256.Signing.PrivateKey()), keyID: Self.keyID, teamID: Self.teamID,
            refresh: .seconds(2400)
        ).token().value
        let refused = try request(provider: forged)
        try await withThrowingTaskGroup(of: APNsResponse.self) { group in
            for _ in 0..<20 {
                group.addTask { try await transport.send(refused, to: imitation.baseURL, deadline: Waiting.ceiling) }
            }
            for try await response in group {
                #expect(response == APNsResponse(status: 403, reason: "InvalidProviderToken"))
            }
        }
        #expect(imitation.requests.count == 20)
        #expect(imitation.requests.allSatisfy { $0.concurrentStreams == 1 })
        let valid = try request(
            provider: try await ProviderTokens(
                key: ProviderKey(key: key), keyID: Self.keyID, teamID: Self.teamID, refresh: .seconds(2400)
            ).token().value)
        _ = try await transport.send(valid, to: imitation.baseURL, deadline: Waiting.ceiling)
        imitation.clearLog()
        try await withThrowingTaskGroup(of: APNsResponse.self) { group in
            for _ in 0..<50 {
                group.addTask { try await transport.send(valid, to: imitation.baseURL, deadline: Waiting.ceiling) }
            }
            for try await response in group { #expect(response.status == 200) }
        }
        #expect(imitation.requests.contains { $0.concurrentStreams > 1 })
        try await transport.shutdown()
        try await imitation.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }

    @Test("the certificate must name the host: an IP address it carries does not stand for a host name")
    func certificateMustNameTheHost() async throws {
        let key = P256.Signing.PrivateKey()
        let (imitation, transport, directory) = try await start(key, certificateNames: "IP:127.0.0.1")
        let valid = try request(
            provider: try await ProviderTokens(
                key: ProviderKey(key: key), keyID: Self.keyID, teamID: Self.teamID, refresh: .seconds(2400)
            ).token().value)
        let byName = try #require(URL(string: "https://localhost:\(imitation.port)"))
        await #expect(throws: APNsTransportError.self) {
            _ = try await transport.send(valid, to: byName, deadline: Waiting.ceiling)
        }
        // Nothing was sent: the provider token never left.
        #expect(imitation.requests.isEmpty)
        // The same certificate proves its own address.
        #expect(try await transport.send(valid, to: imitation.baseURL, deadline: Waiting.ceiling).status == 200)
        try await transport.shutdown()

        // A transport without the test CA trusts only the production root: the imitation's
        // certificate is refused, and again nothing is sent.
        let production = try HTTP2APNsTransport(connectTimeout: Waiting.ceiling)
        await #expect(throws: (any Error).self) {
            _ = try await production.send(valid, to: imitation.baseURL, deadline: Waiting.ceiling)
        }
        #expect(imitation.requests.count == 1)
        try await production.shutdown()
        try await imitation.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }

    @Test func aServerThatNeverFinishesTLSIsGivenUpAtTheConnectTimeout() async throws {
        // A listening socket that never answers: TCP connects (the kernel's backlog), TLS never
        // completes. Without the bound only the request's deadline (far longer) would end it.
        let silent = try SilentListener()
        defer { withExtendedLifetime(silent) {} }
        let base = try #require(URL(string: "https://127.0.0.1:\(silent.port)"))
        let transport = try HTTP2APNsTransport(connectTimeout: .seconds(1))
        await #expect {
            _ = try await transport.send(try request(provider: "x"), to: base, deadline: Waiting.ceiling)
        } throws: { error in
            guard case .connectTimeout(let bound) = error as? APNsTransportError else { return false }
            return bound == .seconds(1)
        }
        try await transport.shutdown()
    }

    @Test func itRefusesWhatAPNsRefuses() async throws {
        let key = P256.Signing.PrivateKey()
        let (imitation, transport, directory) = try await start(key)
        func token(
            keyID: String = Self.keyID, teamID: String = Self.teamID, signer: P256.Signing.PrivateKey = key
        ) async throws -> String {
            try await ProviderTokens(
                key: ProviderKey(key: signer), keyID: keyID, teamID: teamID, refresh: .seconds(2400)
            )
            .token().value
        }
        let good = try await token()
        func send(_ request: APNsRequest) async throws -> APNsResponse {
            // A ceiling that only catches a hang: one request on loopback, on a loaded machine.
            try await transport.send(request, to: imitation.baseURL, deadline: .seconds(120))
        }
        #expect(try await send(try request(provider: good)).status == 200)
        #expect(
            try await send(try request(provider: try await token(keyID: "OTHER12345"))).reason == "InvalidProviderToken"
        )
        #expect(
            try await send(try request(provider: try await token(teamID: "OTHER12345"))).reason
                == "InvalidProviderToken")
        #expect(
            try await send(try request(provider: try await token(signer: P256.Signing.PrivateKey()))).reason
                == "InvalidProviderToken")
        #expect(try await send(try request(provider: "")).reason == "InvalidProviderToken")
        #expect(try await send(try request(token: "abc", provider: good)).reason == "BadDeviceToken")
        var wrongTopic = try request(provider: good, type: .liveactivity)
        wrongTopic.headers = wrongTopic.headers.map { $0.name == "apns-topic" ? ("apns-topic", "com.x") : $0 }
        #expect(try await send(wrongTopic).reason == "TopicDisallowed")
        var big = try request(provider: good)
        big.body = Array(#"{"a":""#.utf8) + Array(repeating: UInt8(ascii: "z"), count: 4100) + Array(#""}"#.utf8)
        #expect(try await send(big) == APNsResponse(status: 413, reason: "PayloadTooLarge"))
        var badPriority = try request(provider: good)
        badPriority.headers = badPriority.headers.map { $0.name == "apns-priority" ? ("apns-priority", "10") : $0 }
        #expect(try await send(badPriority).reason == "BadPriority")
        // Tokens issued up to a cutoff are expired (APNs: older than an hour).
        imitation.expireProviderTokens(issuedAtOrBefore: Int(Date().timeIntervalSince1970))
        #expect(try await send(try request(provider: good)).reason == "ExpiredProviderToken")
        try await transport.shutdown()
        try await imitation.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }
}
