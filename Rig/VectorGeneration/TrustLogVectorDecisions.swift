import DeviceTrust
import Foundation
import SecretCrypto

// The decisions docs/trust-log.md ("Where the spec is silent") makes where trust-log.md could be
// read two ways, one vector each, numbered after every other test so that no earlier tcId moves.
extension TrustLogVectorCases {
    static func decisions(_ b: inout G.Builder) throws {
        let main = try Main()
        let user = main.user
        let rows = main.texts
        let genesisHead = try TrustLogServerRules.check(
            rows[0], backup: nil, userID: user, epoch: 1, head: nil, now: nil
        )
        .head

        // 1. A UUID that is not canonical lowercase is a parse failure, wherever the entry names
        // one: the reader at `parse`, the server at (a) with 22023 (not 42501 at (b): an
        // uppercase copy of the caller's own id names nobody else).
        let header = try uppercased(rows[1], 21..<57)
        let author = try uppercased(rows[1], 111..<147)
        let genesisUser = try uppercased(rows[0], 182 + 29..<182 + 65)
        for (comment, text, position) in [
            ("the header's user_id in uppercase", header, 1), ("the header's author in uppercase", author, 1),
            ("a genesis body's user_id in uppercase", genesisUser, 0),
        ] {
            b.add(
                "TrustLogVerify", comment, ["NonCanonicalUUID"], valid: false,
                invalidTest(user, Array(rows.prefix(position)) + [text], seq: UInt64(position), reason: "parse"))
            var test = G.OutputTest()
            test.userId = G.id(user)
            test.epoch = 1
            test.entry = text
            test.head = position == 0 ? nil : head(genesisHead)
            test.sqlState = "22023"
            b.add("TrustLogAppend", comment, ["NonCanonicalUUID"], valid: false, test)
        }

        // 2. A genesis whose certificate names another device than its author fails at `author`
        // (step 6 names this check for a genesis), even when that device signed it.
        var genesis = try ParsedLogEntry(text: rows[0])
        guard case .genesis(var body) = try genesis.body.get() else { throw Unbuildable() }
        body.certificate = G.certificate(user, main.desktop, role: "trust_root", at: G.start)
        var entry = genesis.entry
        entry.body = try body.bytes()
        entry.sign(identity: main.firstIdentity, second: main.desktop.ed25519)
        genesis = try ParsedLogEntry(text: entry.text)
        b.add(
            "TrustLogVerify", "a genesis whose certificate names another desktop, signed by that desktop", ["Author"],
            valid: false, invalidTest(user, [genesis.entry.text], seq: 0, reason: "author"))

        // 3. An Ed25519 key that is not a point of the curve (canonical, not of small order) is
        // refused at `parse`, as an X25519 key out of range is, not left to fail a signature.
        let offCurve = try offCurveKey()
        let device = try G.Device("off curve", type: "ios-phone")
        let certificate = DeviceCertificate(
            userID: user, deviceID: device.id, x25519PublicKey: device.x25519.publicKey, ed25519PublicKey: offCurve,
            deviceType: device.type, deviceRole: "trusted_executor", issuedAt: G.start)
        b.add(
            "TrustLogVerify", "a certify of a device whose Ed25519 key is not a point of the curve", ["OffCurve"],
            valid: false,
            invalidTest(
                user, [rows[0], G.craft(main.writer(after: 0), .certify, body: try certificate.body())], seq: 1,
                reason: "parse"))
    }

    /// `text` with the hex letters of `range` (byte offsets of the entry) made uppercase.
    static func uppercased(_ text: String, _ range: Range<Int>) throws -> String {
        var bytes = try ByteEncoding.bytes(base64: text)
        var changed = false
        for index in range where (0x61...0x66).contains(bytes[index]) {
            bytes[index] -= 0x20
            changed = true
        }
        guard changed else { throw Unbuildable() }
        return ByteEncoding.base64(bytes)
    }

    /// The first `y` = 2, 3, ... whose encoding is canonical and not of small order but decodes to
    /// no point of the curve.
    static func offCurveKey() throws -> Ed25519PublicKey {
        for y in UInt8(2)...UInt8(255) {
            let key = try Ed25519PublicKey(rawRepresentation: [y] + [UInt8](repeating: 0, count: 31))
            if !key.isCanonicalAndNotSmallOrder { return key }
        }
        throw Unbuildable()
    }
}

/// A decision's vector could not be built as described (a generator bug, never data).
struct Unbuildable: Error {}
