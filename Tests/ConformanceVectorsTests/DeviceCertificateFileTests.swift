import ConformanceVectors
import DeviceTrust
import Foundation
import SecretCrypto
import Testing

@Suite("device-certificate-v1.json")
struct DeviceCertificateFileTests {
    static let path = VectorPaths.projectDirectory.appendingPathComponent("device-certificate-v1.json").path

    static func tests() throws -> [[String: Any]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let json = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(json["algorithm"] as? String == "UNBOUND-DEVICE-CERTIFICATE-V1")
        return try #require((json["testGroups"] as? [[String: Any]])?.first?["tests"] as? [[String: Any]])
    }

    @Test("every case passes the verifier, and there are at least 30 covering every invalid family trust.md lists")
    func coverage() throws {
        let report = try VectorVerifier.verify(path: Self.path)
        #expect(report.failures.isEmpty && report.passed >= 30)
        let flags = Set(
            try Self.tests().filter { $0["result"] as? String == "invalid" }.flatMap { $0["flags"] as? [String] ?? [] })
        for family in [
            "BadSignature", "OtherSigner", "TrailingBytes", "WrongPrefix", "Truncated", "OverlongLength", "WrongUser",
            "WrongDevice",
        ] {
            #expect(flags.contains(family), "no invalid case of family \(family)")
        }
    }

    struct Case: Decodable {
        let tcId: Int
        let flags: [String]
        let result: String
        let identityPublicKey, body, signature, userId, deviceId, x25519PublicKey, ed25519PublicKey, deviceRole: String
        let issuedAt: UInt64
    }

    struct File: Decodable {
        struct Group: Decodable { let tests: [Case] }
        let testGroups: [Group]
    }

    /// What verifying a case gives: the certificate, or the refusal's code.
    static func verdict(_ test: Case) throws -> Result<DeviceCertificate, DeviceTrustError> {
        let identity = try Ed25519PublicKey(base64: test.identityPublicKey)
        let user = UUID(uuidString: test.userId) ?? UUID()
        let device = UUID(uuidString: test.deviceId) ?? UUID()
        let key = try X25519PublicKey(base64: test.x25519PublicKey)
        return Result { () throws(DeviceTrustError) -> DeviceCertificate in
            try DeviceCertificate.verify(
                SignedStatement(body: test.body, signature: test.signature), identityKey: identity,
                userID: user, deviceID: device, x25519PublicKey: key)
        }
    }

    /// Each invalid case is refused for the reason its family names, not by accident (a
    /// mistyped expected field would make every case "invalid").
    @Test("each invalid case is refused for the reason its flag names")
    func reasons() throws {
        let expected: [String: DeviceTrustError.Code] = [
            "BadSignature": .badSignature, "OtherSigner": .badSignature, "TrailingBytes": .trailingBytes,
            "Truncated": .truncated,
            "OverlongLength": .truncated, "WrongPrefix": .wrongPrefix, "MalformedIdentifier": .malformedIdentifier,
            "InvalidText": .invalidText,
            "WrongUser": .wrongUser, "WrongDevice": .wrongDevice, "Encoding": .notBase64,
        ]
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: URL(fileURLWithPath: Self.path)))
        let cases = file.testGroups.flatMap(\.tests).filter { $0.result == "invalid" }
        for test in cases {
            let flag = test.flags.first ?? ""
            switch try Self.verdict(test) {
            case .success(let certificate):
                // Accepted statements must be about something else than expected.
                #expect(flag == "WrongKey" || flag == "WrongField", "tcId \(test.tcId) (\(flag)) verified")
                #expect(
                    certificate.ed25519PublicKey.base64 != test.ed25519PublicKey
                        || certificate.deviceRole != test.deviceRole
                        || certificate.issuedAt != test.issuedAt)
            case .failure(let error):
                let want = expected[flag] ?? .wrongKey
                #expect(error.code == want, "tcId \(test.tcId) (\(flag)): refused as \(error.code)")
            }
        }
        #expect(cases.count >= 30)
    }
}
