import ConformanceVectors
import DeviceTrust
import Foundation
import SecretCrypto

// The decision half of `approval-v1.json`: signed decisions to accept as the asking desktop does.
extension ApprovalVectorGenerator.Builder {
    // MARK: Decisions

    /// The base request as the desktop stored it, and an answering phone.
    var requestBody: [UInt8] {
        get throws {
            try ApprovalCrypto.seal(content, context: context, secret: secret, nonce: Self.bytes("nonce:base", 12))
        }
    }

    static func key(_ label: String) throws -> Ed25519PrivateKey {
        try Ed25519PrivateKey(seed: derive("ed25519:" + label))
    }

    func decision(verdict: ApprovalDecision.Verdict = .approve, decidedAt: UInt64? = nil) throws -> ApprovalDecision {
        ApprovalDecision(
            userID: context.userID, sessionID: context.sessionID, requestID: context.requestID,
            deviceID: try Self.uuid("phone"), verdict: verdict, bodyHash: SHA256.hash(try requestBody),
            read: try ApprovalCrypto.readProof(
                secret: secret, requestID: context.requestID, generation: context.generation),
            decidedAt: decidedAt ?? context.expiresAt - 45)
    }

    /// A decision test: `body`/`signature` as stored, by `device` under `key`.
    mutating func addDecision(
        _ comment: String, _ flags: [String], valid: Bool, body: String, signature: String, device: UUID? = nil,
        key: Ed25519PublicKey? = nil, expected: ApprovalDecision? = nil, seed: Ed25519PrivateKey? = nil
    ) throws {
        var test = test(context, secret: secret, body: ByteEncoding.base64(try requestBody))
        let expected = try expected ?? decision()
        test.deviceId = try (device ?? Self.uuid("phone")).uuidString.lowercased()
        test.signingPublicKey = (try key ?? Self.key("phone").publicKey).base64
        test.decisionBody = body
        test.decisionSignature = signature
        test.verdict = expected.verdict == .approve ? "approve" : "deny"
        test.decidedAt = expected.decidedAt
        if valid {
            test.read = ByteEncoding.hex(expected.read)
            test.signingPrivateKey = seed.map { $0.seedRepresentation.withUnsafeBytes { ByteEncoding.hex($0) } }
        }
        test.tcId = requestTests.count + decisionTests.count + 1
        test.comment = comment
        test.flags = flags
        test.result = valid ? "valid" : "invalid"
        decisionTests.append(test)
    }

    /// Bytes signed by `signer` (the phone by default).
    mutating func signed(
        _ comment: String, _ flags: [String], valid: Bool, _ bytes: [UInt8], signer: Ed25519PrivateKey? = nil,
        device: UUID? = nil, key: Ed25519PublicKey? = nil, expected: ApprovalDecision? = nil
    ) throws {
        let signer = try signer ?? Self.key("phone")
        try addDecision(
            comment, flags, valid: valid, body: ByteEncoding.base64(bytes),
            signature: ByteEncoding.base64(signer.signature(for: bytes)), device: device,
            key: key ?? signer.publicKey,
            expected: expected, seed: valid ? signer : nil)
    }

    mutating func decisions() throws {
        let phone = try Self.key("phone")
        let approve = try decision()
        try signed("approved by a phone", ["Normal"], valid: true, approve.body(), expected: approve)
        let deny = try decision(verdict: .deny)
        try signed("denied by a phone", ["Normal"], valid: true, deny.body(), expected: deny)
        let earliest = try decision(decidedAt: context.expiresAt - 630)
        try signed("decided at expires_at - 630", ["EdgeCase"], valid: true, earliest.body(), expected: earliest)
        let latest = try decision(decidedAt: context.expiresAt + 30)
        try signed("decided at expires_at + 30", ["EdgeCase"], valid: true, latest.body(), expected: latest)

        let bytes = approve.body()
        // Signatures and devices.
        let other = try Self.key("other phone")
        try signed(
            "signed by another device's key", ["OtherSigner"], valid: false, bytes, signer: other,
            key: phone.publicKey)
        var otherDevice = approve
        otherDevice.deviceID = try Self.uuid("other phone")
        try signed(
            "a decision naming another device than the one checked", ["WrongDevice"], valid: false,
            otherDevice.body(),
            signer: phone)
        var sig = phone.signature(for: bytes)
        sig[3] ^= 0x01
        try addDecision(
            "signature modified", ["BadSignature"], valid: false, body: ByteEncoding.base64(bytes),
            signature: ByteEncoding.base64(sig))
        try addDecision(
            "signature truncated to 63 bytes", ["BadSignature"], valid: false, body: ByteEncoding.base64(bytes),
            signature: ByteEncoding.base64(Array(phone.signature(for: bytes).prefix(63))))
        try addDecision(
            "signature with S + L (non-canonical)", ["BadSignature", "Malleability"], valid: false,
            body: ByteEncoding.base64(bytes),
            signature: ByteEncoding.base64(
                DeviceCertificateVectorGenerator.Builder.addOrder(phone.signature(for: bytes))))
        try addDecision(
            "no signature", ["BadSignature"], valid: false, body: ByteEncoding.base64(bytes), signature: "")
        var ownRequest = approve
        ownRequest.deviceID = context.requesterDeviceID
        let desktop = try Self.key("desktop")
        try signed(
            "the requesting desktop answers its own request", ["OwnRequest"], valid: false, ownRequest.body(),
            signer: desktop,
            device: context.requesterDeviceID)

        // What the decision is about.
        var c = approve
        c.bodyHash = SHA256.hash(
            try ApprovalCrypto.seal(
                content, context: context, secret: secret, nonce: Self.bytes("nonce:swapped", 12)))
        try signed("a decision for another body (the server swapped it)", ["OtherBody"], valid: false, c.body())
        c = approve
        c.requestID = try Self.uuid("other request")
        try signed("a decision for another request", ["OtherRequest"], valid: false, c.body())
        c = approve
        c.sessionID = try Self.uuid("other session")
        try signed("a decision for another session", ["OtherRequest"], valid: false, c.body())
        c = approve
        c.userID = try Self.uuid("other user")
        try signed("a decision for another user", ["OtherRequest"], valid: false, c.body())
        c = approve
        c.read = try ApprovalCrypto.readProof(
            secret: SessionSecret(rawRepresentation: Self.derive("other secret")), requestID: context.requestID,
            generation: 1)
        try signed(
            "read from another secret (the device never held this one)", ["NoProofOfSecret"], valid: false, c.body()
        )
        c = approve
        c.read = try ApprovalCrypto.readProof(secret: secret, requestID: context.requestID, generation: 2)
        try signed("read for another generation", ["NoProofOfSecret"], valid: false, c.body())
        c = approve
        c.read = [UInt8](repeating: 0, count: 32)
        try signed("read all zero", ["NoProofOfSecret"], valid: false, c.body())
        c = try decision(decidedAt: context.expiresAt - 631)
        try signed("decided at expires_at - 631", ["OutsideWindow"], valid: false, c.body())
        c = try decision(decidedAt: context.expiresAt + 31)
        try signed("decided at expires_at + 31", ["OutsideWindow"], valid: false, c.body())

        // Strict parsing (each genuinely signed by the phone).
        let verdictOffset = 29 + 4 * 37
        try signed(
            "verdict byte 0x00", ["InvalidVerdict"], valid: false,
            Self.replacing(bytes, at: verdictOffset, with: [0]))
        try signed(
            "verdict byte 0x03", ["InvalidVerdict"], valid: false,
            Self.replacing(bytes, at: verdictOffset, with: [3]))
        try signed("a trailing byte", ["TrailingBytes"], valid: false, bytes + [0])
        try signed("truncated by one byte", ["Truncated"], valid: false, Array(bytes.dropLast()))
        try signed("truncated: no decided_at", ["Truncated"], valid: false, Array(bytes.dropLast(8)))
        try signed("empty", ["Truncated"], valid: false, [])
        try signed(
            "wrong prefix: version 2", ["WrongPrefix"], valid: false,
            Array("unbound-approval-decision-v2".utf8) + bytes.dropFirst(28))
        try signed(
            "wrong prefix: the request's AAD label", ["WrongPrefix"], valid: false,
            Array("unbound-approval-request-v1\u{0}".utf8) + bytes.dropFirst(29))
        try signed(
            "prefix without its 0x00", ["WrongPrefix"], valid: false, Array(bytes.prefix(28)) + bytes.dropFirst(29))
        try signed(
            "user id in uppercase", ["MalformedIdentifier"], valid: false,
            Self.replacing(bytes, at: 29, with: Array(context.userID.uuidString.uppercased().utf8)))
        try signed(
            "separator after the device id is not 0x00", ["MalformedIdentifier"], valid: false,
            Self.replacing(bytes, at: verdictOffset - 1, with: [0x20]))
        try signed(
            "decided_at 2^63", ["OutOfRange"], valid: false,
            Self.replacing(bytes, at: bytes.count - 8, with: [0x80, 0, 0, 0, 0, 0, 0, 0]))

        // Encodings as stored.
        let signature = ByteEncoding.base64(phone.signature(for: bytes))
        try addDecision(
            "decision body without its padding", ["Encoding"], valid: false,
            body: ByteEncoding.base64(bytes).filter { $0 != "=" }, signature: signature)
        try addDecision(
            "decision body in hex", ["Encoding"], valid: false, body: ByteEncoding.hex(bytes), signature: signature)
    }

    static func replacing(_ bytes: [UInt8], at offset: Int, with replacement: [UInt8]) -> [UInt8] {
        var out = bytes
        out.replaceSubrange(offset..<offset + replacement.count, with: replacement)
        return out
    }
}
