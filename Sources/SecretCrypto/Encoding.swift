import Foundation

/// Strict text encodings of bytes: standard base64 (RFC 4648 §4, padded), base64url without
/// padding (§5) and lowercase hex.
///
/// Decoding is strict the way key material needs: no whitespace, exact padding, no
/// non-canonical trailing bits, nothing after the last character. These are the crypto
/// backend's constant-time codecs (libsodium's, or their rules in Swift), so decoding a key does
/// not leak it through timing.
public enum ByteEncoding {
    /// Encodes bytes as padded standard base64.
    ///
    /// - Parameter bytes: The bytes to encode.
    /// - Returns: The base64 text.
    public static func base64(_ bytes: some ContiguousBytes) -> String {
        bytes.withUnsafeBytes { base64(raw: $0) }
    }

    /// Decodes strict padded standard base64.
    ///
    /// - Parameter text: The base64 text.
    /// - Returns: The decoded bytes.
    /// - Throws: ``CryptoError/invalidEncoding`` for anything but canonical base64.
    public static func bytes(base64 text: String) throws -> [UInt8] {
        try decodeBase64(text)
    }

    /// Encodes bytes as lowercase hex.
    ///
    /// - Parameter bytes: The bytes to encode.
    /// - Returns: The hex text.
    public static func hex(_ bytes: some ContiguousBytes) -> String {
        bytes.withUnsafeBytes { String(decoding: Primitives.backend.hex($0), as: UTF8.self) }
    }

    /// Decodes hex (either case, even length, nothing else).
    ///
    /// - Parameter text: The hex text.
    /// - Returns: The decoded bytes.
    /// - Throws: ``CryptoError/invalidEncoding`` for anything that is not hex.
    public static func bytes(hex text: String) throws -> [UInt8] {
        var text = text
        return try text.withUTF8 { utf8 in
            guard let decoded = Primitives.backend.decodeHex(UnsafeRawBufferPointer(utf8)) else {
                throw CryptoError.invalidEncoding
            }
            return decoded
        }
    }

    // MARK: - Internal

    static func base64(raw: UnsafeRawBufferPointer) -> String {
        String(decoding: Primitives.backend.base64(raw, urlSafe: false), as: UTF8.self)
    }

    static func decodeBase64(_ text: String) throws -> [UInt8] {
        var text = text
        return try text.withUTF8 { try decodeBase64(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// Decodes padded standard base64 given as UTF-8 bytes; every character must be consumed.
    static func decodeBase64(utf8: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard isASCII(utf8), let decoded = Primitives.backend.decodeBase64(utf8, urlSafe: false) else {
            throw CryptoError.invalidEncoding
        }
        return decoded
    }

    /// Whether every byte is 7-bit ASCII, checked without a data-dependent branch.
    ///
    /// libsodium 1.0.18's `sodium_base642bin` classifies characters with signed-`char`
    /// arithmetic and accepts every byte >= 0x80 as a valid base64 digit, so each base64 decode
    /// in this module checks this first.
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var accumulated: UInt8 = 0
        for byte in bytes { accumulated |= byte }
        return accumulated & 0x80 == 0
    }
}
