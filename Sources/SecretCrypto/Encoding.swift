internal import CSodium
import Foundation

/// Strict text encodings of bytes: standard base64 (RFC 4648 §4, padded), base64url without
/// padding (§5) and lowercase hex.
///
/// Decoding is strict the way key material needs: no whitespace, exact padding, no
/// non-canonical trailing bits, nothing after the last character. These use libsodium's
/// constant-time codecs, so decoding a key does not leak it through timing.
public enum ByteEncoding {
    /// Encodes bytes as padded standard base64.
    ///
    /// - Parameter bytes: The bytes to encode.
    /// - Returns: The base64 text.
    public static func base64(_ bytes: some ContiguousBytes) -> String {
        bytes.withUnsafeBytes { base64(raw: $0, variant: sodium_base64_VARIANT_ORIGINAL) }
    }

    /// Decodes strict padded standard base64.
    ///
    /// - Parameter text: The base64 text.
    /// - Returns: The decoded bytes.
    /// - Throws: ``CryptoError/invalidEncoding`` for anything but canonical base64.
    public static func bytes(base64 text: String) throws -> [UInt8] {
        try decodeBase64(text, variant: sodium_base64_VARIANT_ORIGINAL)
    }

    /// Encodes bytes as lowercase hex.
    ///
    /// - Parameter bytes: The bytes to encode.
    /// - Returns: The hex text.
    public static func hex(_ bytes: some ContiguousBytes) -> String {
        bytes.withUnsafeBytes { raw in
            let length = raw.count * 2 + 1
            return String(unsafeUninitializedCapacity: length) { out in
                out.withMemoryRebound(to: CChar.self) { chars in
                    _ = sodium_bin2hex(chars.baseAddress!, length, raw.cPointer(), raw.count)
                }
                return length - 1
            }
        }
    }

    /// Decodes hex (either case, even length, nothing else).
    ///
    /// - Parameter text: The hex text.
    /// - Returns: The decoded bytes.
    /// - Throws: ``CryptoError/invalidEncoding`` for anything that is not hex.
    public static func bytes(hex text: String) throws -> [UInt8] {
        var text = text
        return try text.withUTF8 { utf8 -> [UInt8] in
            guard utf8.count % 2 == 0 else { throw CryptoError.invalidEncoding }
            guard utf8.count > 0 else { return [] }
            let capacity = utf8.count / 2
            var decodedCount = 0
            let result = try [UInt8](unsafeUninitializedCapacity: capacity) { out, initialized in
                let status = utf8.withMemoryRebound(to: CChar.self) { chars in
                    sodium_hex2bin(out.baseAddress!, capacity, chars.baseAddress!, chars.count, nil, &decodedCount, nil)
                }
                initialized = status == 0 ? decodedCount : 0
                guard status == 0 else { throw CryptoError.invalidEncoding }
            }
            return result
        }
    }

    // MARK: - Internal

    static func base64(raw: UnsafeRawBufferPointer, variant: Int32) -> String {
        let length = sodium_base64_encoded_len(raw.count, variant)
        return String(unsafeUninitializedCapacity: length) { out in
            out.withMemoryRebound(to: CChar.self) { chars in
                _ = sodium_bin2base64(chars.baseAddress!, length, raw.cPointer(), raw.count, variant)
            }
            return length - 1 // drop the NUL terminator
        }
    }

    static func decodeBase64(_ text: String, variant: Int32) throws -> [UInt8] {
        var text = text
        return try text.withUTF8 { try decodeBase64(utf8: UnsafeRawBufferPointer($0), variant: variant) }
    }

    /// Decodes base64 text given as UTF-8 bytes; `nil` end pointer makes libsodium insist that
    /// every character is consumed.
    static func decodeBase64(utf8: UnsafeRawBufferPointer, variant: Int32) throws -> [UInt8] {
        guard isASCII(utf8) else { throw CryptoError.invalidEncoding }
        let capacity = utf8.count / 4 * 3 + 3
        var decodedCount = 0
        return try [UInt8](unsafeUninitializedCapacity: capacity) { out, initialized in
            let status = sodium_base642bin(
                out.baseAddress!, capacity, utf8.cPointer(to: CChar.self), utf8.count, nil, &decodedCount, nil, variant)
            initialized = status == 0 ? decodedCount : 0
            guard status == 0 else { throw CryptoError.invalidEncoding }
        }
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
