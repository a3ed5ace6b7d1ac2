import Foundation
import SecretCrypto

/// Where a generator's keys, ids, secrets and nonces come from: HKDF-SHA256 of its fixed seed
/// (salt empty, info the label), so the same file comes out on every run and every machine.
struct VectorSeed {
    let seed: SecureBytes

    /// A seed named by its text.
    init(_ text: String) { seed = SecureBytes(copying: Array(text.utf8)) }

    /// `count` bytes for `label`.
    func derive(_ label: String, _ count: Int = 32) throws -> SecureBytes {
        try HKDFSHA256.deriveKey(
            inputKeyMaterial: seed, salt: [UInt8](), info: Array(label.utf8), outputByteCount: count)
    }

    /// ``derive(_:_:)`` as an array.
    func bytes(_ label: String, _ count: Int = 32) throws -> [UInt8] {
        try derive(label, count).withUnsafeBytes { Array($0) }
    }

    /// A version-4 UUID from the bytes of `"uuid:" + label`.
    func uuid(_ label: String) throws -> UUID {
        var b = try bytes("uuid:" + label, 16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        return UUID(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }
}
