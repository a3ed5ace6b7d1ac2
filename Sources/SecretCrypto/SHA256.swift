internal import CSodium
import Foundation

/// SHA-256 (FIPS 180-4) on libsodium's `crypto_hash_sha256`.
public enum SHA256 {
    /// The digest length in bytes.
    public static let byteCount = 32

    /// The 32-byte digest of `message`.
    public static func hash(_ message: some ContiguousBytes) -> [UInt8] {
        Sodium.ensureInitialized()
        return message.withUnsafeBytes { input in
            [UInt8](unsafeUninitializedCapacity: byteCount) { out, initialized in
                let status = crypto_hash_sha256(out.baseAddress!, input.cPointer(), UInt64(input.count))
                precondition(status == 0, "crypto_hash_sha256 failed")
                initialized = byteCount
            }
        }
    }
}
