import DeviceTrust
import Foundation
import RemoteStore
import SecretCrypto

/// The seed corpora: inputs built from the vector files (every key, secret and code in them is
/// a published test value), so that fuzzing starts from inputs each parser accepts and the
/// neighbours the vectors already name as invalid.
public enum FuzzSeeds {
    /// One seed: a file name and its bytes.
    public struct Seed: Sendable {
        public let name: String
        public let bytes: [UInt8]
    }

    /// Seeds for every target, from the vector files in `vectors` (the repository's
    /// `testvectors/`).
    ///
    /// - Throws: When a vector file is missing or not the JSON it should be.
    public static func generate(vectors: URL) throws -> [FuzzTarget: [Seed]] {
        func tests(_ file: String) throws -> [[String: Any]] {
            let data = try Data(contentsOf: vectors.appendingPathComponent(file))
            guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                let groups = object["testGroups"] as? [[String: Any]]
            else {
                throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: file])
            }
            return groups.flatMap { $0["tests"] as? [[String: Any]] ?? [] }
        }
        func text(_ test: [String: Any], _ key: String) -> String { test[key] as? String ?? "" }
        func lines(_ fields: [String]) -> [UInt8] { Array(fields.joined(separator: "\n").utf8) }
        var seeds: [FuzzTarget: [Seed]] = [:]
        func add(_ target: FuzzTarget, _ name: String, _ bytes: [UInt8]) {
            seeds[target, default: []].append(Seed(name: name, bytes: bytes))
        }

        let v1 = try tests("session-secret-v1.json")
        for test in v1.prefix(24) {
            let id = test["tcId"] as? Int ?? 0
            add(
                .envelopeV1, "tc\(id)",
                lines([
                    text(test, "recipientPrivateKey"), text(test, "sessionId"),
                    text(test, "ephemeralPublicKey"), text(test, "encryptedSecret"),
                ]))
        }
        for test in v1.prefix(6) {
            add(.secretText, "tc\(test["tcId"] as? Int ?? 0)", Array(text(test, "plaintext").utf8))
        }
        add(.secretText, "padded", Array("sess_75NOj1yQuTmf7YHbzhcQN60qCC6NuJIcu3KKwNr_0Ho=".utf8))
        add(.secretText, "empty", [])

        let v2 = try tests("session-secret-v2.json")
        for test in v2.prefix(24) {
            add(
                .envelopeV2, "tc\(test["tcId"] as? Int ?? 0)",
                lines([
                    text(test, "recipientPrivateKey"), text(test, "recipientDeviceId"), text(test, "sessionId"),
                    text(test, "ephemeralPublicKey"), text(test, "encryptedSecret"), text(test, "senderDeviceId"),
                    text(test, "senderPublicKey"),
                ]))
        }

        let key = try ByteEncoding.bytes(hex: text(v1[0], "recipientPrivateKey"))
        for target in [FuzzTarget.deviceKeyFile, .signingKeyFile] {
            add(target, "32", key)
            add(target, "31", Array(key.dropLast()))
            add(target, "33", key + [0])
            add(target, "empty", [])
        }

        let certificates = try tests("device-certificate-v1.json")
        for test in certificates.prefix(30) {
            let id = test["tcId"] as? Int ?? 0
            if let body = try? ByteEncoding.bytes(base64: text(test, "body")) {
                let isRevocation = body.starts(with: Array(DeviceRevocation.prefix.utf8))
                add(isRevocation ? .revocation : .certificate, "tc\(id)", body)
            }
            add(
                .statementVerify, "tc\(id)",
                lines([
                    text(test, "identityPublicKey"), text(test, "userId"), text(test, "deviceId"),
                    text(test, "body"), text(test, "signature"), "certificate",
                ]))
        }
        // A revocation signed with the vectors' identity key, for the revocation path.
        if let test = certificates.first(where: { ($0["result"] as? String) == "valid" }),
            let identity = try? Ed25519PrivateKey(
                seed: SecureBytes(copying: ByteEncoding.bytes(hex: text(test, "identityPrivateKey")))),
            let user = UUID(uuidString: text(test, "userId")), let device = UUID(uuidString: text(test, "deviceId")),
            let x25519 = try? X25519PublicKey(base64: text(test, "x25519PublicKey"))
        {
            let revocation = DeviceRevocation(
                userID: user, deviceID: device, x25519PublicKey: x25519, revokedAt: 1_795_000_100)
            let signed = revocation.signed(by: identity)
            add(.revocation, "signed", revocation.body())
            add(
                .statementVerify, "revocation",
                lines([
                    text(test, "identityPublicKey"), text(test, "userId"), text(test, "deviceId"),
                    signed.body, signed.signature, "revocation",
                ]))
        }

        let approvals = try tests("approval-v1.json")
        for test in approvals {
            let id = test["tcId"] as? Int ?? 0
            if let body = test["decisionBody"] as? String, let bytes = try? ByteEncoding.bytes(base64: body) {
                add(.approvalDecision, "tc\(id)", bytes)
            } else if test["result"] as? String == "valid",
                let content = try? ApprovalContent(
                    tool: text(test, "tool"), summary: text(test, "summary"), detail: text(test, "detail"))
            {
                add(.approvalContent, "tc\(id)", ApprovalContent.encode(content))
            }
        }
        add(.approvalContent, "extra-member", Array(#"{"tool":"a","summary":"b","detail":"","x":""}"#.utf8))
        add(.approvalContent, "surrogate", Array(#"{"tool":"a","summary":"\ud83d\ude00","detail":"\ud800"}"#.utf8))
        add(.approvalContent, "empty", [])

        for test in try tests("question-choices-v1.json") {
            let id = test["tcId"] as? Int ?? 0
            if let answer = test["statement"] as? String, let bytes = try? ByteEncoding.bytes(hex: answer) {
                add(.questionAnswer, "tc\(id)", bytes + Array(repeating: 0, count: 64))
            }
            if let questions = test["questions"] as? [[String: Any]], test["deviceId"] == nil {
                let encoded = try JSONSerialization.data(withJSONObject: ["questions": questions], options: .sortedKeys)
                add(.questionContent, "tc\(id)", [UInt8](encoded))
            }
        }
        add(.questionAnswer, "empty", [])
        add(.questionAnswer, "prefix-only", Array(QuestionAnswer.prefix.utf8) + [0] + Array(repeating: 0, count: 64))
        add(.questionContent, "text", Array(#"{"text":"Go?"}"#.utf8))
        add(
            .questionContent, "choices",
            Array(#"{"questions":[{"question":"Go?","header":"","options":["Yes","No"],"multiSelect":false}]}"#.utf8))
        for (name, input) in [
            ("start", #"{"session_id":"abc","cwd":"/w","hook_event_name":"SessionStart","source":"startup"}"#),
            (
                "permission",
                #"{"session_id":"abc","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"npm test\nls","description":"x"}}"#
            ),
            ("stop", #"{"session_id":"abc","hook_event_name":"Stop","background_tasks":[{"status":"running"}]}"#),
        ] {
            add(.hookInput, name, Array(input.utf8))
        }
        add(.hookInput, "no-session", Array(#"{"hook_event_name":"Stop"}"#.utf8))
        add(.hookInput, "truncated", Array(#"{"session_id":"abc","hook_event_na"#.utf8))
        for test in try tests("identity-backup-v1.json") {
            let id = "tc\(test["tcId"] as? Int ?? 0)"
            if let body = test["body"] as? String {
                add(
                    .identityBackup, id,
                    lines([text(test, "recoveryKey"), text(test, "userId"), text(test, "identityPublicKey"), body]))
            } else {
                add(.recoveryKey, id, Array(text(test, "recoveryKey").utf8))
            }
        }
        for test in try tests("lockscreen-sanitiser-v2.json") {
            add(.lockScreenText, "tc\(test["tcId"] as? Int ?? 0)", Array(text(test, "input").utf8))
        }

        // A pairing code of fixed test bytes, as shown, typed in lowercase, and one letter short.
        let code = try PairingCode(
            inviteID: Array(1...8), secret: SecureBytes(copying: Array(repeating: 0x42, count: 16)),
            fingerprint: IdentityFingerprint(bytes: Array(100..<116))!)
        add(.pairingCode, "shown", Array(code.revealText().utf8))
        add(
            .pairingCode, "lowercase",
            Array(code.revealText().lowercased().replacingOccurrences(of: "-", with: " ").utf8))
        add(.pairingCode, "short", Array(code.revealText().dropLast().utf8))

        for (index, shape) in PostgRESTRemoteStore.ResponseShape.allCases.enumerated() {
            for (suffix, body) in responseBodies(shape) {
                add(.postgrestResponse, "\(shape.rawValue)-\(suffix)", [UInt8(index)] + Array(body.utf8))
            }
        }

        for file in try FileManager.default.contentsOfDirectory(atPath: vectors.path).sorted()
        where file.hasSuffix(".json") {
            let data = try Data(contentsOf: vectors.appendingPathComponent(file))
            guard var object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                var groups = object["testGroups"] as? [[String: Any]]
            else { continue }
            groups = groups.prefix(2).map { group in
                var group = group
                group["tests"] = (group["tests"] as? [Any] ?? []).prefix(3).map { $0 }
                return group
            }
            object["testGroups"] = groups
            object["numberOfTests"] = groups.reduce(0) { $0 + (($1["tests"] as? [Any])?.count ?? 0) }
            add(
                .vectorFile, String(file.dropLast(5)),
                Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        }

        for test in try tests("trust-log-v1.json") {
            let id = test["tcId"] as? Int ?? 0
            if let entries = test["entries"] as? [String], id <= 40 {
                add(
                    .trustLog, "tc\(id)",
                    lines([text(test, "userId"), String(test["epoch"] as? Int ?? 1)] + entries))
            }
            if test["body"] != nil { add(.trustLogWitness, "tc\(id)", Array(text(test, "body").utf8)) }
        }
        add(.trustLogWitness, "garbage", Array("dW5ib3VuZA==".utf8))

        add(.vectorFile, "unknown-algorithm", Array(#"{"algorithm":"NOPE","numberOfTests":0,"testGroups":[]}"#.utf8))
        for (index, query) in queries.enumerated() { add(.postgrestQuery, "q\(index)", Array(query.utf8)) }

        let claims = [
            #"{"aud":"authenticated","exp":1900000000,"role":"authenticated","sub":"7f4500e1-e4cb-4a6e-b807-759fe19ef40b"}"#,
            #"{"aud":["authenticated","other"],"exp":1900000000,"iat":1799999990,"nbf":1799999990,"role":"anon"}"#,
            #"{"aud":"authenticated","exp":1700000000,"role":"authenticated","sub":"7f4500e1-e4cb-4a6e-b807-759fe19ef40b"}"#,
            #"{"aud":"authenticated","exp":"1900000000","role":"service_role"}"#,
        ]
        for (index, set) in claims.enumerated() { add(.jwt, "claims\(index)", [0] + Array(set.utf8)) }
        add(.jwt, "token", [1] + Array("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJyb2xlIjoiYW5vbiJ9.c2lnbmF0dXJl".utf8))
        add(.jwt, "none", [1] + Array("eyJhbGciOiJub25lIn0.eyJyb2xlIjoic2VydmljZV9yb2xlIn0.".utf8))
        return seeds
    }

    /// Query strings of the kinds the client sends, and a few the attack tests send.
    static let queries = [
        "select=id,user_id,title&user_id=eq.7f4500e1-e4cb-4a6e-b807-759fe19ef40b&order=id.asc&limit=1000",
        "select=session_id,device_id&session_id=in.(ffebfb61-4e99-4004-a242-72dbbc54ae76,03c407ba-9b8d-4564-9a5b-a1dff5000000)",
        "or=(and(updated_at.gt.2026-01-01T00:00:00Z,id.gt.ffebfb61-4e99-4004-a242-72dbbc54ae76),updated_at.gt.2026-01-02)",
        "not.and=(title.like.*fix*,is_worktree.is.true)&session_pid=gte.10",
        "title=ilike.%22a,b%22&runtime_status=is.null&select=t:title::text",
        "on_conflict=id&columns=id,user_id,%22title%22",
        "order=updated_at.desc.nullslast,id&select=*",
        "title=eq.%27%3B%20DROP%20TABLE%20x%3B--&id=isdistinct.x",
        "select=rel(col)&order=id.sideways&title=nope.x&or=(id.eq.1",
    ]

    /// Bodies for one response shape: one the client accepts, and one near miss.
    static func responseBodies(_ shape: PostgRESTRemoteStore.ResponseShape) -> [(String, String)] {
        let user = "7f4500e1-e4cb-4a6e-b807-759fe19ef40b", device = "deda8175-a45d-48f9-8072-7f4d911e5820"
        let session = "ffebfb61-4e99-4004-a242-72dbbc54ae76", time = "2026-11-22T10:00:00.123456+00:00"
        switch shape {
        case .devices:
            return [
                (
                    "row",
                    #"[{"id":"\#(device)","user_id":"\#(user)","name":"phone","device_type":"ios-phone","hostname":null,"is_active":true,"device_role":"trusted_executor","public_key":"1W5p1+d3u0zXFp8sG96Wc/171Modi3501FlDJQu10lY=","is_trusted":false,"last_seen_at":"\#(time)","capabilities":{"envelope_versions":[1,2]}}]"#
                ),
                ("bad-id", #"[{"id":"not-a-uuid","user_id":"\#(user)","name":"phone"}]"#),
            ]
        case .repositories:
            return [
                (
                    "row",
                    #"[{"id":"\#(session)","user_id":"\#(user)","device_id":"\#(device)","name":"repo","local_path":"/src","remote_url":null,"default_branch":"main","parent_repository_id":null,"is_worktree":false,"worktree_branch":null,"status":"active","last_synced_at":null,"created_at":"\#(time)","updated_at":"\#(time)"}]"#
                ),
                ("object", #"{"id":1}"#),
            ]
        case .sessions:
            return [
                (
                    "row",
                    #"[{"id":"\#(session)","user_id":"\#(user)","device_id":"\#(device)","repository_id":"\#(session)","title":"t","session_pid":42,"session_started_at":"\#(time)","session_ended_at":null,"status":"active","current_branch":"main","working_directory":"/src","last_heartbeat_at":null,"is_worktree":false,"worktree_path":null,"runtime_status":{"state":"running"},"runtime_status_updated_at":"\#(time)","created_at":"\#(time)","updated_at":"\#(time)"}]"#
                ),
                (
                    "bad-date",
                    #"[{"id":"\#(session)","user_id":"\#(user)","device_id":"\#(device)","repository_id":"\#(session)","session_started_at":"yesterday"}]"#
                ),
            ]
        case .secrets:
            return [
                (
                    "row",
                    #"[{"session_id":"\#(session)","device_id":"\#(device)","ephemeral_public_key":"1W5p1+d3u0zXFp8sG96Wc/171Modi3501FlDJQu10lY=","encrypted_secret":"\\x4e42686e"}]"#
                ),
                ("number", #"[{"session_id":"\#(session)","device_id":"\#(device)","encrypted_secret":5}]"#),
            ]
        case .secretRequests:
            return [
                (
                    "row",
                    #"[{"id":"\#(session)","user_id":"\#(user)","session_id":"\#(session)","requester_device_id":"\#(device)","created_at":"\#(time)"}]"#
                )
            ]
        case .outbox:
            return [
                (
                    "row",
                    #"[{"id":7,"device_id":"\#(device)","token":"t","push_type":"alert","priority":10,"collapse_id":null,"payload":"{\"a\":1}","created_at":"\#(time)","delivered_at":null,"attempts":0,"last_error":null}]"#
                ),
                ("bad-id", #"[{"id":"7","token":"t","push_type":"alert"}]"#),
            ]
        case .statements:
            return [("row", #"[{"device_id":"\#(device)","user_id":"\#(user)","body":"AAAA","signature":"AAAA"}]"#)]
        case .identityKeys:
            return [("row", #"[{"public_key":"onGiYcOSDrBtBfXzU0BgUYjaPbRBNkFWeuBlR6AQdSQ="}]"#)]
        case .changes:
            return [
                ("feed", #"{"server_time":"\#(time)","devices":[],"secret_requests":[],"statements":"abc"}"#),
                ("array", "[]"),
            ]
        case .digest:
            return [("buckets", #"[{"bucket":0,"pairs":3,"h1":123,"h2":-5}]"#), ("null", "null")]
        case .sessionClaim:
            return [
                (
                    "claim",
                    #"{"handed_off":true,"previous_device_id":"\#(device)","previous_client_type":"ios","notified":1}"#
                )
            ]
        case .pushTokenRegistered:
            return [("registered", #"{"id":"\#(device)","reassigned":false,"previousInvalidated":true}"#)]
        case .pushTokenStatus:
            return [
                (
                    "status",
                    #"{"deviceTokenRegistered":true,"liveActivityTokens":[{"activityId":"a","sessionId":"\#(session)","registeredAt":"\#(time)"}]}"#
                )
            ]
        case .approvalClearing:
            return [("cleared", #"{"success":true,"devicesNotified":2}"#)]
        case .error:
            return [
                ("pgrst", #"{"code":"PGRST301","message":"JWT expired\u001b[31m","details":null,"hint":null}"#),
                ("text", "<html>502</html>"),
            ]
        case .contentRange:
            return [("range", "0-999/100000"), ("star", "*/0"), ("bad", "0-x/1")]
        }
    }
}
