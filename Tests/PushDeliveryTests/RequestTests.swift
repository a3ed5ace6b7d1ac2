import Crypto
import Foundation
import SyncModel
import Testing

@testable import PushDelivery

/// The worker's pure parts: requests, collapse ids, answers, provider tokens, configuration.
@Suite struct RequestTests {
    static let row = OutboxRow(
        id: 1, token: String(repeating: "ab", count: 32), pushType: .alert, priority: 5, collapseID: nil,
        payload: #"{"aps": {"alert": {"body": "a \"quoted\" : , word"}}, "x": [1, 2]}"#, apnsID: UUID(),
        expiresAt: Date(timeIntervalSince1970: 2_000_000_000), createdAt: Date(), attempts: 1, environment: "production"
    )

    @Test func headersFollowTheSpecForEachPushType() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let alert = try APNsRequest.make(row: Self.row, bundleID: "com.x", providerToken: "T", now: now)
        let headers = Dictionary(uniqueKeysWithValues: alert.headers.map { ($0.name, $0.value) })
        #expect(alert.path == "/3/device/" + Self.row.token)
        #expect(headers["authorization"] == "bearer T")
        #expect(headers["apns-push-type"] == "alert" && headers["apns-topic"] == "com.x")
        // An alert goes at its row's priority (5: a passive alert, notifications round 2) and
        // expires with its approval; any other priority is 10.
        #expect(headers["apns-priority"] == "5" && headers["apns-expiration"] == "2000000000")
        var urgent = Self.row
        urgent.priority = 10
        let ten = try APNsRequest.make(row: urgent, bundleID: "com.x", providerToken: "T", now: now)
        #expect(ten.headers.first { $0.name == "apns-priority" }?.value == "10")
        #expect(headers["apns-id"] == Self.row.apnsID.uuidString.lowercased())
        #expect(headers["apns-collapse-id"] == nil)

        var background = Self.row
        background.pushType = .background
        background.priority = 10
        let silent = Dictionary(
            uniqueKeysWithValues: try APNsRequest.make(row: background, bundleID: "com.x", providerToken: "T", now: now)
                .headers.map { ($0.name, $0.value) })
        #expect(silent["apns-priority"] == "5" && silent["apns-expiration"] == "1800003600")

        var live = Self.row
        live.pushType = .liveactivity
        live.priority = 5
        live.collapseID = "c"
        let activity = Dictionary(
            uniqueKeysWithValues: try APNsRequest.make(row: live, bundleID: "com.x", providerToken: "T", now: now)
                .headers.map { ($0.name, $0.value) })
        #expect(activity["apns-topic"] == "com.x.push-type.liveactivity")
        #expect(activity["apns-priority"] == "5" && activity["apns-expiration"] == "1800000300")
        #expect(activity["apns-collapse-id"] == "c")
    }

    /// Finding 6 of round 4: a client that is not this engine writes raw status text; what the
    /// queuing functions copy of it into a payload is sanitised before it leaves for APNs.
    @Test func displayedTextIsSanitisedWhateverTheClientWrote() throws {
        var live = Self.row
        live.pushType = .liveactivity
        live.payload = """
            {"aps": {"event": "update", "timestamp": 1, "content-state": {"status": "processing", \
            "currentOperation": "deploy with sk_live_\(String(repeating: "a1", count: 12))", \
            "todoProgress": {"completed": 1, "total": 2, "currentTask": "password:\\u200bhunter2"}}}}
            """
        let request = try APNsRequest.make(row: live, bundleID: "com.x", providerToken: "T")
        let body = try #require(JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        let aps = try #require(body["aps"] as? [String: Any])
        let state = try #require(aps["content-state"] as? [String: Any])
        #expect(state["currentOperation"] as? String == "deploy with [REDACTED]")
        let todo = try #require(state["todoProgress"] as? [String: Any])
        #expect(todo["currentTask"] as? String == "[REDACTED]")
        #expect(todo["completed"] as? Int == 1 && aps["event"] as? String == "update")
        let text = String(decoding: request.body, as: UTF8.self)
        #expect(!text.contains("hunter2") && !text.contains("a1a1a1"))

        var alert = Self.row
        alert.payload = #"{"aps": {"alert": {"title": "Bearer abcdefghijklmnopqrstuvwx", "body": "ok"}}}"#
        let alertBody = String(
            decoding: try APNsRequest.make(row: alert, bundleID: "com.x", providerToken: "T").body, as: UTF8.self)
        #expect(!alertBody.contains("abcdefghijklmnop") && alertBody.contains("[REDACTED]"))
        alert.payload = #"{"aps": {"alert": "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}"#
        let plain = String(
            decoding: try APNsRequest.make(row: alert, bundleID: "com.x", providerToken: "T").body, as: UTF8.self)
        #expect(!plain.contains("ghp_abc"))

        // What the check cannot read is never sent.
        alert.payload = "[1, 2]"
        #expect(throws: APNsRequest.Refusal.payloadNotAnObject) {
            try APNsRequest.make(row: alert, bundleID: "com.x", providerToken: "T")
        }
    }

    /// Text this engine already sanitised is sent byte for byte: the sanitiser is idempotent on
    /// every output of its vector file.
    @Test func theSanitiserIsIdempotentOnEveryVectorOutput() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("testvectors/lockscreen-sanitiser-v2.json")
        let json = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any])
        var count = 0
        for group in try #require(json["testGroups"] as? [[String: Any]]) {
            for test in try #require(group["tests"] as? [[String: Any]]) {
                let output = try #require(test["output"] as? String)
                #expect(LockScreenText.sanitised(output) == output)
                count += 1
            }
        }
        #expect(count >= 103)
    }

    @Test func anIPv6HostIsBracketedInTheAuthorityAndNowhereElse() throws {
        let v6 = try Endpoint(#require(URL(string: "https://[::1]:2197/x")))
        #expect(v6.authority == "[::1]:2197" && v6.host == "::1")
        #expect(try Endpoint(#require(URL(string: "https://[2001:db8::1]"))).authority == "[2001:db8::1]")
        #expect(try Endpoint(#require(URL(string: "https://api.push.apple.com"))).authority == "api.push.apple.com")
        #expect(try Endpoint(#require(URL(string: "https://127.0.0.1:8443"))).authority == "127.0.0.1:8443")
    }

    @Test func thePayloadIsCompactedWithoutTouchingStrings() throws {
        let request = try APNsRequest.make(row: Self.row, bundleID: "com.x", providerToken: "T")
        #expect(
            String(decoding: request.body, as: UTF8.self)
                == #"{"aps":{"alert":{"body":"a \"quoted\" : , word"}},"x":[1,2]}"#)
        var big = Self.row
        big.payload = #"{"a": ""# + String(repeating: "z", count: 4090) + #""}"#
        #expect(throws: APNsRequest.Refusal.payloadTooLarge(4098)) {
            try APNsRequest.make(row: big, bundleID: "com.x", providerToken: "T")
        }
        // Exactly 4,096 bytes is sent.
        big.payload = #"{"a": ""# + String(repeating: "z", count: 4088) + #""}"#
        #expect(try APNsRequest.make(row: big, bundleID: "com.x", providerToken: "T").body.count == 4096)
    }

    @Test func collapseIDsOverSixtyFourBytesOrNotPrintableAreHashed() {
        let short = String(repeating: "a", count: 64)
        #expect(APNsRequest.collapseID(short) == short)
        let long = String(repeating: "a", count: 65)
        let hashed = APNsRequest.collapseID(long)
        #expect(hashed.utf8.count == 45 && hashed.hasPrefix("c-"))
        // base64url(SHA-256), its first 43 characters: the whole digest, unpadded.
        let digest = Data(SHA256.hash(data: Data(long.utf8))).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(hashed == "c-" + digest.prefix(43))
        #expect(APNsRequest.collapseID(long) == hashed)
        #expect(APNsRequest.collapseID("é").utf8.count == 45)
        #expect(APNsRequest.collapseID("tab\there").utf8.count == 45)
    }

    @Test func everyAnswerHasItsAction() {
        let table: [(Int, String?, AnswerAction)] = [
            (200, nil, .delivered),
            (410, "Unregistered", .invalidateToken(since: nil)),
            (410, "ExpiredToken", .invalidateToken(since: nil)),
            (400, "BadDeviceToken", .invalidateToken(since: nil)),
            (400, "DeviceTokenNotForTopic", .invalidateToken(since: nil)),
            (400, "BadCollapseId", .deadLetter), (400, "PayloadEmpty", .deadLetter), (400, nil, .deadLetter),
            (404, "BadPath", .deadLetter), (405, "MethodNotAllowed", .deadLetter),
            (413, "PayloadTooLarge", .deadLetter),
            (400, "IdleTimeout", .retryTransient), (503, "ServiceUnavailable", .retryTransient),
            (403, "ExpiredProviderToken", .refreshProviderToken),
            (403, "InvalidProviderToken", .openCircuit), (403, "MissingProviderToken", .openCircuit),
            (429, "TooManyRequests", .throttleDeviceToken),
            (429, "TooManyProviderTokenUpdates", .throttleProviderTokenUpdates),
            (500, "InternalServerError", .retryServerError),
        ]
        for (status, reason, action) in table {
            #expect(AnswerAction(APNsResponse(status: status, reason: reason)) == action, "\(status) \(reason ?? "")")
        }
        let gone = APNsResponse(status: 410, body: Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8))
        #expect(gone.reason == "Unregistered" && gone.timestamp == Date(timeIntervalSince1970: 1_700_000_000.123))
        // A reason that is not one of APNs' words is no reason.
        #expect(APNsResponse(status: 400, body: Array(#"{"reason":"a b\n"}"#.utf8)).reason == nil)
    }

    @Test func theProviderTokenIsES256OverTheSpecsClaims() async throws {
        let key = P256.Signing.PrivateKey()
        let tokens = ProviderTokens(
            key: ProviderKey(key: key), keyID: "KEY1234567", teamID: "TEAM123456", refresh: .seconds(2400))
        let token = try await tokens.token()
        let parts = token.value.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        func decode(_ text: String) -> Data {
            var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while base64.count % 4 != 0 { base64 += "=" }
            return Data(base64Encoded: base64)!
        }
        #expect(String(decoding: decode(parts[0]), as: UTF8.self) == #"{"alg":"ES256","kid":"KEY1234567"}"#)
        #expect(
            String(decoding: decode(parts[1]), as: UTF8.self)
                == #"{"iss":"TEAM123456","iat":\#(Int(token.issuedAt.timeIntervalSince1970))}"#)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: decode(parts[2]))
        #expect(key.publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)))
        // Reused until the refresh interval.
        #expect(try await tokens.token().value == token.value)
    }

    @Test func aHundredExpiredAnswersMintOnce() async throws {
        // Time stands still here: on a busy machine the hundred answers took over a minute of
        // wall time, and the "within a minute" below was no longer true.
        let still = Clock()
        let tokens = ProviderTokens(
            key: ProviderKey(key: P256.Signing.PrivateKey()), keyID: "KEY1234567", teamID: "TEAM123456",
            refresh: .seconds(2400), now: { still.now })
        let first = try await tokens.token()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<100 { group.addTask { _ = try await tokens.expired(generation: first.generation) } }
            try await group.waitForAll()
        }
        #expect(await tokens.mints == 2)
        // A fresh token refused as expired again within a minute: no more mints (a clock problem).
        let second = try await tokens.token()
        _ = try await tokens.expired(generation: second.generation)
        #expect(await tokens.mints == 2)
        // A late answer about the replaced token, minutes later, mints nothing either.
        let clock = Clock()
        let timed = ProviderTokens(
            key: ProviderKey(key: P256.Signing.PrivateKey()), keyID: "KEY1234567", teamID: "TEAM123456",
            refresh: .seconds(2400), now: { clock.now })
        let old = try await timed.token()
        _ = try await timed.expired(generation: old.generation)
        clock.advance(120)
        _ = try await timed.expired(generation: old.generation)
        #expect(await timed.mints == 2)

        // TooManyProviderTokenUpdates: nothing new, even past the refresh interval.
        let eager = ProviderTokens(
            key: ProviderKey(key: P256.Signing.PrivateKey()), keyID: "KEY1234567", teamID: "TEAM123456", refresh: .zero)
        _ = try await eager.token()
        _ = try await eager.token()
        #expect(await eager.mints == 2)
        await eager.blockMinting(for: .seconds(600))
        _ = try await eager.token()
        #expect(await eager.mints == 2)
    }

    @Test func theRefreshIntervalIsClampedAndSettingsAreChecked() throws {
        let base = [
            "APNS_KEY_PATH": "/k.p8", "APNS_KEY_ID": "ABC123DEFG", "APNS_TEAM_ID": "TEAM123456",
            "APNS_BUNDLE_ID": "com.example.app", "APNS_ENVIRONMENT": "both",
            "DATABASE_URL": "postgres://push_sender:s3cret@db.example.com:6543/postgres?sslmode=require",
        ]
        let configuration = try PushWorkerConfiguration.fromEnvironment(base)
        #expect(configuration.providerTokenRefresh == .seconds(2400))
        #expect(configuration.database.description == "push_sender@db.example.com:6543/postgres")
        #expect(configuration.database.password == "s3cret" && configuration.database.tls == .require)
        #expect(
            configuration.baseURL(forTokenEnvironment: "development").absoluteString
                == "https://api.sandbox.push.apple.com:443")
        #expect(
            configuration.baseURL(forTokenEnvironment: "production").absoluteString == "https://api.push.apple.com:443")
        var fast = base
        fast["PUSH_PROVIDER_TOKEN_REFRESH_MINUTES"] = "5"
        #expect(try PushWorkerConfiguration.fromEnvironment(fast).providerTokenRefresh == .seconds(1200))
        fast["PUSH_PROVIDER_TOKEN_REFRESH_MINUTES"] = "90"
        #expect(try PushWorkerConfiguration.fromEnvironment(fast).providerTokenRefresh == .seconds(3300))
        let cases: [(String, String?, String)] = [
            ("APNS_KEY_ID", "short", "APNS_KEY_ID"), ("APNS_TEAM_ID", nil, "APNS_TEAM_ID"),
            ("APNS_ENVIRONMENT", "staging", "APNS_ENVIRONMENT"), ("APNS_PORT", "8443", "APNS_PORT"),
            ("DATABASE_URL", "mysql://x@y/z", "DATABASE_URL"), ("APNS_BASE_URL", "https://10.0.0.1", "APNS_BASE_URL"),
            ("APNS_BASE_URL", "http://127.0.0.1", "APNS_BASE_URL"), ("PUSH_BATCH_SIZE", "0", "PUSH_BATCH_SIZE"),
        ]
        for (name, value, variable) in cases {
            var environment = base
            environment[name] = value
            #expect(throws: ConfigurationErrors.self) { try PushWorkerConfiguration.fromEnvironment(environment) }
            do {
                _ = try PushWorkerConfiguration.fromEnvironment(environment)
            } catch {
                #expect(error.problems.map(\.variable) == [variable])
                #expect(!error.description.contains("s3cret"))
            }
        }
        // Every problem at once, in the order read, not only the first.
        var wrong = base
        wrong["APNS_KEY_ID"] = nil
        wrong["APNS_TEAM_ID"] = "team"
        wrong["DATABASE_URL"] = "mysql://x:s3cret@y/z"
        wrong["PUSH_BATCH_SIZE"] = "0"
        wrong["PUSH_METRICS_PORT"] = "http"
        do {
            _ = try PushWorkerConfiguration.fromEnvironment(wrong)
            Issue.record("five mistakes were accepted")
        } catch {
            #expect(
                error.problems.map(\.variable) == [
                    "APNS_KEY_ID", "APNS_TEAM_ID", "DATABASE_URL", "PUSH_BATCH_SIZE", "PUSH_METRICS_PORT",
                ])
            #expect(!error.description.contains("s3cret"))
        }
        var allowed = base
        allowed["APNS_BASE_URL"] = "https://10.0.0.1"
        allowed["APNS_ALLOW_NON_LOOPBACK_OVERRIDE"] = "1"
        #expect(try PushWorkerConfiguration.fromEnvironment(allowed).baseURLOverride?.host == "10.0.0.1")
    }

    @Test("a lease no longer than twice the request deadline is refused at start-up")
    func leaseMustOutlastTheRequestDeadline() throws {
        var environment = [
            "APNS_KEY_PATH": "/k.p8", "APNS_KEY_ID": "ABC123DEFG", "APNS_TEAM_ID": "TEAM123456",
            "APNS_BUNDLE_ID": "com.example.app", "APNS_ENVIRONMENT": "both",
            "DATABASE_URL": "postgres://push_sender@127.0.0.1/postgres",
            "PUSH_LEASE_SECONDS": "20", "PUSH_REQUEST_DEADLINE_SECONDS": "10",
        ]
        do {
            _ = try PushWorkerConfiguration.fromEnvironment(environment)
            Issue.record("a 20 s lease with a 10 s deadline was accepted")
        } catch {
            #expect(error.problems.map(\.variable) == ["PUSH_LEASE_SECONDS"])
            #expect(error.problems.first?.problem.contains("PUSH_REQUEST_DEADLINE_SECONDS") == true)
        }
        environment["PUSH_LEASE_SECONDS"] = "21"
        #expect(try PushWorkerConfiguration.fromEnvironment(environment).lease == .seconds(21))
    }

    @Test("without sslmode, a database on another host requires TLS; a loopback one prefers it")
    func sslModeDefaultsByHost() throws {
        let cases: [(String, DatabaseSettings.TLSMode)] = [
            ("postgres://u@db.example.com/postgres", .require), ("postgres://u@10.1.2.3:6543/postgres", .require),
            ("postgres://u@127.0.0.1/postgres", .prefer), ("postgres://u@localhost/postgres", .prefer),
            ("postgres://u@[::1]/postgres", .prefer),
            ("postgres://u@db.example.com/postgres?sslmode=disable", .disable),
            ("postgres://u@db.example.com/postgres?sslmode=prefer", .prefer),
        ]
        for (url, mode) in cases {
            #expect(try DatabaseSettings(url: url).tls == mode, "\(url)")
        }
    }
}

/// A clock a test moves by hand.
final class Clock: @unchecked Sendable {
    private let lock = NSLock()
    private var time = Date(timeIntervalSince1970: 1_800_000_000)
    var now: Date { lock.withLock { time } }
    func advance(_ seconds: TimeInterval) { lock.withLock { time += seconds } }
}
