import Foundation

/// SHA-256 (FIPS 180-4) on the crypto backend (``CryptoBackend``).
public enum SHA256 {
    /// The digest length in bytes.
    public static let byteCount = 32

    /// The 32-byte digest of `message`.
    public static func hash(_ message: some ContiguousBytes) -> [UInt8] {
        return message.withUnsafeBytes { input in
            [UInt8](unsafeUninitializedCapacity: byteCount) { out, initialized in
                Primitives.backend.sha256(input, into: out.baseAddress!)
                initialized = byteCount
            }
        }
    }
}
