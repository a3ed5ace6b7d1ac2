import ConformanceVectors
import Crypto
import Foundation
import SecretCrypto
import Testing

/// Paths of the project's and the shared vector files.
enum VectorPaths {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let projectDirectory = packageRoot.appendingPathComponent("testvectors")
    /// The vendored copies (testvectors/third_party/README.md says where they come from).
    static let wycheproofDirectory = projectDirectory.appendingPathComponent("third_party/wycheproof")

    static func jsonFiles(in directory: URL) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted().map { directory.appendingPathComponent($0).path }
    }

    static var project: [String] { jsonFiles(in: projectDirectory) }
    static var wycheproof: [String] { jsonFiles(in: wycheproofDirectory) }
}

@Suite("Vector files through the CLI's loader")
struct VectorFileTests {
    @Test("the project ships the RFC files and the session-secret file")
    func projectFiles() {
        let names = Set(VectorPaths.project.map { URL(fileURLWithPath: $0).lastPathComponent })
        #expect(
            names.isSuperset(of: [
                "rfc7748-x25519.json", "rfc5869-hkdf-sha256.json", "rfc8439-chacha20-poly1305.json",
                "rfc4231-hmac-sha256.json", "session-secret-v1.json", "session-secret-v2.json",
                "device-certificate-v1.json", "approval-v1.json", "lockscreen-sanitiser-v2.json",
                "identity-backup-v1.json", "question-v1.json", "remote-rules-v1.json",
            ]))
    }

    @Test("every project vector passes", arguments: VectorPaths.project)
    func projectVectors(path: String) throws {
        let report = try VectorVerifier.verify(path: path)
        #expect(report.passed > 0)
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.declaredCountMismatch == nil)
    }

    @Test("the vendored Wycheproof files are all there")
    func vendoredFiles() {
        #expect(
            Set(VectorPaths.wycheproof.map { URL(fileURLWithPath: $0).lastPathComponent }) == [
                "x25519_test.json", "chacha20_poly1305_test.json", "hkdf_sha256_test.json", "hmac_sha256_test.json",
            ])
    }

    @Test("every Wycheproof vector passes", arguments: VectorPaths.wycheproof)
    func wycheproofVectors(path: String) throws {
        let report = try VectorVerifier.verify(path: path)
        #expect(report.passed > 0)
        #expect(report.failures.isEmpty, "\(report.failures.prefix(5))")
    }

    /// The field holding each algorithm's expected output.
    static let expectedField: [String: String] = [
        "XDH": "shared", "CHACHA20-POLY1305": "tag", "HKDF-SHA-256": "okm", "HMACSHA256": "tag",
        "UNBOUND-SESSION-SECRET-V1": "plaintext", "UNBOUND-SESSION-SECRET-V2": "plaintext",
        "UNBOUND-DEVICE-CERTIFICATE-V1": "deviceRole", "UNBOUND-APPROVAL-V1": "body",
        "UNBOUND-LOCKSCREEN-SANITISER-V2": "output", "UNBOUND-IDENTITY-BACKUP-V1": "expected",
        "UNBOUND-PAIRING-V1": "expected", "UNBOUND-QUESTION-V1": "text",
    ]

    /// Files whose groups hold different outputs (the trust log's): the field by group type;
    /// a dot names a field of an object.
    static let groupField: [String: String] = [
        "TrustLogVerify": "headHash", "TrustLogAppend": "newHead.hash", "TrustLogBackupOpen": "expected",
        "RootSeedOpen": "expected", "TrustLogWitnessVerify": "entryHash", "RecoveryKeyAgreement": "expected",
        "AppendChain": "anchor", "ChoicesOpen": "body", "AnswerAccept": "answer", "NameBasedUuid": "uuid",
        "AgentSessionId": "sessionId", "AlertDecision": "decision", "MayQueuePush": "mayQueue",
        "RuntimeTaskKind": "raises", "StatusTaskKind": "raises", "TaskAlertCoalescing": "action",
        "RequestRefusal": "refused", "ApprovalTransition": "to", "QuestionTransition": "to",
        "DeliveryOutcome": "outcome", "DeliverySpeaks": "speaks", "Unreached": "reason", "LiveActivityDue": "due",
        "LiveActivityRefusal": "refused",
        "LiveActivityStatus": "status",
        "AlertPriority": "priority", "LiveActivityPriority": "priority", "AlertPayload": "payload",
        "LiveActivityPayload": "payload", "PushTokenRefusal": "refused",
        "DeviceRegistration": "answer", "NewDeviceRoom": "room", "SilentPayload": "payload", "BadgeCounts": "counts",
        "PushTokenPlacement": "placement", "EpochInForce": "inForce", "TrustedDevice": "trusted",
        "TrustLogMarks": "certified", "WitnessAdmission": "admission", "CallerGate": "answer",
        "SessionDesktop": "answer", "Asker": "answer", "QuestionAnswer": "answer", "ApprovalAnswer": "answer",
        "RequestControl": "answer", "QuestionClose": "answer", "TrustLogCall": "answer", "SessionEvent": "answer",
        "TrustEpochStatus": "epochStatus", "TrustPlacement": "answer",
    ]

    static func field(_ path: String, of test: [String: Any]) -> String? {
        let parts = path.split(separator: ".").map(String.init)
        guard parts.count == 2 else { return test[path] as? String }
        return (test[parts[0]] as? [String: Any])?[parts[1]] as? String
    }

    static func setField(_ path: String, of test: inout [String: Any], to value: String) {
        let parts = path.split(separator: ".").map(String.init)
        guard parts.count == 2, var object = test[parts[0]] as? [String: Any] else {
            test[path] = value
            return
        }
        object[parts[1]] = value
        test[parts[0]] = object
    }

    static let thirdParty = VectorPaths.projectDirectory.appendingPathComponent("third_party")

    @Test("the vendored HPKE and EdDSA files pass in full")
    func vendoredHPKEAndEdDSA() throws {
        let hpke = try VectorVerifier.verify(
            path: Self.thirdParty.appendingPathComponent("hpke/rfc9180_x25519_sha256_chachapoly.json").path)
        #expect(hpke.algorithm == .hpke && hpke.passed == 4 * (257 + 3 + 1) && hpke.failures.isEmpty)
        let eddsa = try VectorVerifier.verify(
            path: Self.thirdParty.appendingPathComponent("eddsa/ed25519_test.json").path)
        #expect(eddsa.algorithm == .eddsa && eddsa.passed == 151 && eddsa.failures.isEmpty)
    }

    @Test(
        "one changed byte in an HPKE ciphertext, export, key schedule value or EdDSA signature fails that test",
        arguments: [("encryptions", "ct"), ("exports", "exported_value"), ("", "key"), ("", "enc")])
    func hpkeMutation(list: String, field: String) throws {
        let path = Self.thirdParty.appendingPathComponent("hpke/rfc9180_x25519_sha256_chachapoly.json").path
        var suites = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [[String: Any]])
        func flip(_ hex: String) -> String { String(hex.dropLast()) + (hex.last == "0" ? "1" : "0") }
        if list.isEmpty {
            suites[2][field] = flip(try #require(suites[2][field] as? String))
        } else {
            var items = try #require(suites[2][list] as? [[String: Any]])
            items[1][field] = flip(try #require(items[1][field] as? String))
            suites[2][list] = items
        }
        let report = try VectorVerifier.verify(data: JSONSerialization.data(withJSONObject: suites), path: path)
        #expect(!report.failures.isEmpty && report.failures.allSatisfy { $0.tcId == 3 })
    }

    @Test("a valid EdDSA signature with one bit flipped fails")
    func eddsaMutation() throws {
        let path = Self.thirdParty.appendingPathComponent("eddsa/ed25519_test.json").path
        var json = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        var groups = try #require(json["testGroups"] as? [[String: Any]])
        var tests = try #require(groups[0]["tests"] as? [[String: Any]])
        let sig = try #require(tests[0]["sig"] as? String)
        tests[0]["sig"] = (sig.first == "0" ? "1" : "0") + String(sig.dropFirst())
        groups[0]["tests"] = tests
        json["testGroups"] = groups
        let report = try VectorVerifier.verify(data: JSONSerialization.data(withJSONObject: json), path: path)
        #expect(report.failures.map(\.tcId) == [try #require(tests[0]["tcId"] as? Int)])
    }

    @Test("approval-v1.json flags every invalid case with why, covering each kind the issue names")
    func approvalFlags() throws {
        let path = VectorPaths.projectDirectory.appendingPathComponent("approval-v1.json")
        let json = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any])
        let groups = try #require(json["testGroups"] as? [[String: Any]])
        #expect(Set(groups.compactMap { $0["type"] as? String }) == ["ApprovalRequestOpen", "ApprovalDecisionVerify"])
        var flags = Set<String>()
        for group in groups {
            for test in try #require(group["tests"] as? [[String: Any]]) where test["result"] as? String == "invalid" {
                let own = try #require(test["flags"] as? [String])
                #expect(!own.isEmpty && !(test["comment"] as? String ?? "").isEmpty)
                flags.formUnion(own)
            }
        }
        #expect(
            flags.isSuperset(of: [
                "WrongKey", "WrongGeneration", "TamperedAAD", "Truncated", "TrailingBytes", "OtherSigner", "OtherBody",
                "NoProofOfSecret", "MalformedPlaintext", "Encoding",
            ]))
    }

    @Test("lockscreen-sanitiser-v2.json covers each rule, overlaps, non-ASCII text, controls, the window and the cut")
    func lockScreenCoverage() throws {
        let path = VectorPaths.projectDirectory.appendingPathComponent("lockscreen-sanitiser-v2.json")
        let json = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any])
        let groups = try #require(json["testGroups"] as? [[String: Any]])
        var flags = Set<String>()
        for group in groups {
            for test in try #require(group["tests"] as? [[String: Any]]) {
                flags.formUnion(try #require(test["flags"] as? [String]))
                // Nothing leaves the sanitiser longer than 200 scalars or with a control character.
                let output = try #require(test["output"] as? String)
                #expect(output.unicodeScalars.count <= 200)
                #expect(!output.unicodeScalars.contains { $0.properties.generalCategory == .control })
            }
        }
        #expect(
            flags.isSuperset(of: [
                "KeywordValue", "Bearer", "Base64", "SessionToken", "JWT", "PrivateKey", "Overlap", "NonASCII",
                "CaseFolding", "ControlCharacters", "Cut", "Grapheme", "HiddenCharacters", "Confusables",
                "TokenFormat", "UserInfo", "Component", "Weak", "Separator", "Option", "UserOption", "MySQL",
                "Scheme", "Hex", "CommitID", "Path", "Window", "NearMiss",
            ]))
    }

    @Test("identity-backup-v1.json flags every invalid case, covering each kind recovery.md names")
    func identityBackupFlags() throws {
        let path = VectorPaths.projectDirectory.appendingPathComponent("identity-backup-v1.json")
        let json = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any])
        let groups = try #require(json["testGroups"] as? [[String: Any]])
        #expect(Set(groups.compactMap { $0["type"] as? String }) == ["IdentityBackupOpen", "RecoveryKeyParse"])
        var flags = Set<String>()
        for group in groups {
            for test in try #require(group["tests"] as? [[String: Any]]) where test["result"] as? String == "invalid" {
                flags.formUnion(try #require(test["flags"] as? [String]))
            }
        }
        #expect(
            flags.isSuperset(of: [
                "WrongKey", "OtherUser", "OtherIdentity", "SeedMismatch", "Tampered", "Truncated", "TrailingBytes",
                "BadVersion", "Encoding", "Mistyped", "Swapped", "Length", "Alphabet", "UnusedBits",
            ]))
    }

    @Test("pairing-v1.json covers revocations, codes, MACs and fingerprints, with each refusal flagged")
    func pairingFlags() throws {
        let path = VectorPaths.projectDirectory.appendingPathComponent("pairing-v1.json")
        let json = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any])
        let groups = try #require(json["testGroups"] as? [[String: Any]])
        #expect(
            Set(groups.compactMap { $0["type"] as? String }) == [
                "DeviceRevocationVerify", "PairingCodeParse", "PairingMAC", "IdentityFingerprint",
            ])
        var flags = Set<String>()
        for group in groups {
            for test in try #require(group["tests"] as? [[String: Any]]) where test["result"] as? String == "invalid" {
                flags.formUnion(try #require(test["flags"] as? [String]))
            }
        }
        #expect(
            flags.isSuperset(of: [
                "OtherSigner", "ModifiedSignature", "WrongUser", "WrongDevice", "Truncated", "TrailingBytes",
                "WrongPrefix", "Encoding", "Length", "Alphabet", "ModifiedMAC", "WrongSecret", "WrongInvite",
                "Mistyped", "Swapped", "UnusedBits",
            ]))
    }

    /// Each valid test is verified on its own, in a file holding its group's parameters and that
    /// test alone: as it is, it passes; with its expected value changed, it and only it fails.
    /// (The whole file is verified once by the tests above; verifying it again for every change
    /// was quadratic: 284,089 verifications for remote-rules-v1.json alone, now two per test.)
    @Test("changing one byte of any expected value makes exactly that test fail", arguments: VectorPaths.project)
    func mutation(path: String) throws {
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        let json = try #require(JSONSerialization.jsonObject(with: original) as? [String: Any])
        let algorithm = try #require(json["algorithm"] as? String)
        let groups = try #require(json["testGroups"] as? [[String: Any]])
        func failures(group: [String: Any], test: [String: Any]) throws -> [Int] {
            var alone = json
            var single = group
            single["tests"] = [test]
            alone["testGroups"] = [single]
            let data = try JSONSerialization.data(withJSONObject: alone)
            return try VectorVerifier.verify(data: data, path: path).failures.map(\.tcId)
        }
        var mutated = 0
        for group in groups {
            let field = try #require(Self.expectedField[algorithm] ?? Self.groupField[group["type"] as? String ?? ""])
            for test in try #require(group["tests"] as? [[String: Any]]) where test["result"] as? String == "valid" {
                let tcId = try #require(test["tcId"] as? Int)
                #expect(try failures(group: group, test: test) == [], "tcId \(tcId) alone")
                // An entry that only revokes has its revoked list changed, not its empty certified one.
                let revokes = !(test["revoked"] as? [String] ?? []).isEmpty
                let field = group["type"] as? String == "TrustLogMarks" && revokes ? "revoked" : field
                // A yes-or-no answer is turned over, a number gains one; a text has its last character flipped: a hex
                // digit for byte fields, a base64url one for secrets (an empty text gains one).
                var copy = test
                if group["type"] as? String == "EpochInForce" {
                    // An epoch, or absent for none (an epoch of 1 would read as a yes-or-no answer).
                    copy[field] = (test[field] as? Int ?? 0) + 1
                } else if let answer = test[field] as? Bool {
                    copy[field] = !answer
                } else if let number = test[field] as? Int {
                    copy[field] = number + 1
                } else if test[field] == nil, group["type"] as? String == "AlertPriority" {
                    copy[field] = 1 // absent: nothing is queued; any number says otherwise
                } else if test[field] == nil, ["AlertPayload", "SilentPayload"].contains(group["type"] as? String) {
                    copy[field] = "{}" // absent: nothing is queued; any payload says otherwise
                } else if var ids = test[field] as? [String] {
                    // A list of ids: the first has its last digit changed; an empty one gains an id.
                    if let first = ids.first {
                        ids[0] = String(first.dropLast()) + (first.last == "0" ? "1" : "0")
                    } else {
                        ids = ["00000000-0000-4000-8000-000000000000"]
                    }
                    copy[field] = ids
                } else {
                    let value = try #require(Self.field(field, of: test))
                    if let last = value.last {
                        let replacement: Character =
                            last == "0" ? "1" : (last == "A" ? "E" : (last.isHexDigit ? "0" : "A"))
                        Self.setField(field, of: &copy, to: String(value.dropLast()) + String(replacement))
                    } else {
                        Self.setField(field, of: &copy, to: "A")
                    }
                }
                #expect(try failures(group: group, test: copy) == [tcId], "mutating \(field) of tcId \(tcId)")
                mutated += 1
            }
        }
        #expect(mutated > 0)
    }

    @Test("an unknown algorithm is an error, not a skip")
    func unknownAlgorithm() throws {
        let data = Data(#"{"algorithm":"ROT13","testGroups":[]}"#.utf8)
        #expect {
            try VectorVerifier.verify(data: data, path: "x.json")
        } throws: { error in
            (error as? VectorFileError)?.code == .unknownAlgorithm("ROT13")
        }
    }

    @Test(
        "malformed files are errors",
        arguments: [
            "", "{", "[]", #"{"testGroups":[]}"#,
            #"{"algorithm":"XDH","testGroups":[{"curve":"curve25519","tests":[{"tcId":1,"comment":"","result":"valid"}]}]}"#,
            #"{"algorithm":"XDH","testGroups":[{"curve":"curve25519","tests":[{"tcId":1,"comment":"","public":"zz","private":"00","shared":"00","result":"valid"}]}]}"#,
            #"{"algorithm":"HMACSHA256","testGroups":[{"keySize":1,"tagSize":256,"tests":[{"tcId":1,"comment":"","key":"","msg":"","tag":"","result":"maybe"}]}]}"#,
        ])
    func malformed(text: String) {
        #expect {
            try VectorVerifier.verify(data: Data(text.utf8), path: "x.json")
        } throws: { error in
            (error as? VectorFileError)?.code == .malformed
        }
    }

    @Test("an unreadable file is an error")
    func unreadable() {
        #expect {
            try VectorVerifier.verify(path: "/nonexistent/vectors.json")
        } throws: { error in
            (error as? VectorFileError)?.code == .unreadable
        }
    }
}

@Suite("session-secret-v1.json")
struct SessionSecretVectorTests {
    static let path = VectorPaths.projectDirectory.appendingPathComponent("session-secret-v1.json").path

    static func tests() throws -> [EnvelopeGroup.Test] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try VectorLoader.decode(EnvelopeGroup.self, from: data, path: path).testGroups.flatMap(\.tests)
    }

    @Test("has at least 40 cases covering every required kind")
    func coverage() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: Self.path))
        let json = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
        let tests = try #require((json["testGroups"] as? [[String: Any]])?.first?["tests"] as? [[String: Any]])
        #expect(tests.count >= 40)
        let flags = Set(tests.flatMap { $0["flags"] as? [String] ?? [] })
        #expect(
            flags.isSuperset(of: [
                "Deterministic", "UppercaseSessionId", "ByteaAsciiHex", "ByteaRawHex", "Modified", "WrongSession",
                "LowOrderEphemeral", "Truncated", "MalformedPlaintext",
            ]))
        #expect(tests.contains { $0["result"] as? String == "valid" })
        #expect(tests.contains { $0["result"] as? String == "invalid" })
    }

    @Test(
        "swift-crypto (CryptoKit API) opens every valid case and no invalid one to a secret, but the low-order ones"
    )
    func independentImplementation() throws {
        var opened = 0
        // swift-crypto has no low-order check: those cases are built to open under it
        // (LowOrderReaderTests), and only the check refuses them.
        for test in try Self.tests() where !test.comment.hasPrefix("low-order ephemeral public key") {
            let outcome: String? = {
                guard let raw = try? SecretEnvelope.decodeEncryptedSecret(test.encryptedSecret) else { return nil }
                return try? CryptoKitCrossCheckHelper.open(
                    ephemeral: test.ephemeralPublicKey, encrypted: raw,
                    privateKey: Data(test.recipientPrivateKey.bytes), sessionID: test.sessionId
                )
            }()
            switch test.result {
            case .valid:
                #expect(outcome == test.plaintext, "tcId \(test.tcId): \(test.comment)")
                opened += 1
            case .invalid, .acceptable:
                // CryptoKit opens the "authentic but not a secret" cases; the text check must then refuse.
                if let outcome {
                    #expect(!CryptoKitCrossCheckHelper.isSecretTextForm(outcome), "tcId \(test.tcId): \(test.comment)")
                }
            }
        }
        #expect(opened >= 15)
    }
}

/// The iOS app's decryption path, written against the CryptoKit API only.
enum CryptoKitCrossCheckHelper {
    static func open(ephemeral: String, encrypted: [UInt8], privateKey: Data, sessionID: String) throws -> String {
        guard UUID(uuidString: sessionID) != nil, let ephemeralBytes = Data(base64Encoded: ephemeral) else {
            throw CryptoKitError.incorrectParameterSize
        }
        let recipient = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: privateKey)
        let shared = try recipient.sharedSecretFromKeyAgreement(with: .init(rawRepresentation: ephemeralBytes))
        let key = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: Data(sessionID.lowercased().utf8),
            sharedInfo: Data("unbound-session-secret-v1".utf8), outputByteCount: 32
        )
        let plaintext = try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: Data(encrypted)), using: key)
        return String(decoding: plaintext, as: UTF8.self)
    }

    /// An independent check of the text form: prefix, alphabet, length, canonical final character.
    static func isSecretTextForm(_ text: String) -> Bool {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        guard text.hasPrefix("sess_"), text.count == 48 else { return false }
        let values = text.dropFirst(5).map { alphabet.firstIndex(of: $0) }
        guard values.allSatisfy({ $0 != nil }) else { return false }
        // 43 characters carry 258 bits for 256: the last character's low 2 bits must be zero.
        return values.last!! % 4 == 0
    }
}

@Suite("session-secret-v2.json")
struct SessionSecretV2FileTests {
    static let path = VectorPaths.projectDirectory.appendingPathComponent("session-secret-v2.json").path

    @Test("has at least 60 cases covering every invalid family envelope-v2.md lists")
    func coverage() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: Self.path))
        let json = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
        let tests = try #require((json["testGroups"] as? [[String: Any]])?.first?["tests"] as? [[String: Any]])
        #expect(tests.count >= 60)
        let flags = Set(tests.flatMap { $0["flags"] as? [String] ?? [] })
        #expect(
            flags.isSuperset(of: [
                "Deterministic", "ModifiedTag", "ModifiedGeneration", "ModifiedSender", "WrongRecipient",
                "WrongSession", "WrongSender",
                "LowOrderEnc", "LowOrderSender", "Truncated", "WrongVersion", "V1BodyWithV2Prefix",
                "MalformedPlaintext",
                "ByteaAsciiHex", "ByteaRawHex", "ZeroGeneration",
            ]))
    }
}
