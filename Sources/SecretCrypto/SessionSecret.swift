internal import CSodium

/// A session's 32-byte secret, the key that later encrypts the session's messages.
///
/// Its text form, which is what envelopes carry and deployed clients store, is `sess_`
/// followed by the base64url encoding of the 32 bytes without `=` padding: 48 characters.
/// The value never prints; ``revealTextForm()`` is the one deliberate way out.
public struct SessionSecret: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// Raw secret length in bytes.
    public static let byteCount = 32
    /// Length of the text form in characters (`sess_` + 43).
    public static let textFormLength = 48

    static let prefix: [UInt8] = Array("sess_".utf8)

    /// The 32 raw bytes.
    public let rawRepresentation: SecureBytes

    /// Generates a fresh secret from the OS CSPRNG (`randombytes_buf`).
    public init() {
        rawRepresentation = SecureBytes(randomCount: Self.byteCount)
    }

    /// Wraps 32 raw bytes.
    ///
    /// - Parameter rawRepresentation: Exactly 32 bytes.
    /// - Throws: ``CryptoError/invalidKeyLength(expected:actual:)`` for any other length.
    public init(rawRepresentation: SecureBytes) throws {
        guard rawRepresentation.count == Self.byteCount else {
            throw CryptoError.invalidKeyLength(expected: Self.byteCount, actual: rawRepresentation.count)
        }
        self.rawRepresentation = rawRepresentation
    }

    /// Parses the text form strictly: the `sess_` prefix, exactly 43 base64url characters, no
    /// padding, no non-canonical final character, decoding to exactly 32 bytes.
    ///
    /// - Parameter textForm: The text form.
    /// - Throws: ``CryptoError/malformedSessionSecret`` for anything else.
    public init(textForm: String) throws {
        var text = textForm
        self = try text.withUTF8 { try Self(textFormBytes: UnsafeRawBufferPointer($0)) }
    }

    /// Parses the text form given as UTF-8 bytes (used on decrypted plaintext, which must never
    /// become a `String`).
    init(textFormBytes bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count == Self.textFormLength, ByteEncoding.isASCII(bytes),
            bytes.prefix(Self.prefix.count).elementsEqual(Self.prefix)
        else { throw CryptoError.malformedSessionSecret }
        let encoded = UnsafeRawBufferPointer(rebasing: bytes[Self.prefix.count...])
        let capacity = Self.byteCount + 1
        var decodedCount = 0
        var failed = false
        let raw = SecureBytes(count: Self.byteCount) { out in
            // Decode into a scratch buffer one byte larger so an over-long input is detected
            // rather than silently truncated.
            withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 1) { scratch in
                defer { sodium_memzero(scratch.baseAddress, scratch.count) }
                let status = encoded.withMemoryRebound(to: CChar.self) { chars in
                    sodium_base642bin(
                        scratch.baseAddress!.assumingMemoryBound(to: UInt8.self), capacity,
                        chars.baseAddress, chars.count, nil, &decodedCount, nil,
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING
                    )
                }
                if status == 0 && decodedCount == Self.byteCount {
                    out.copyMemory(from: UnsafeRawBufferPointer(rebasing: scratch[0..<Self.byteCount]))
                } else {
                    failed = true
                }
            }
        }
        guard !failed else { throw CryptoError.malformedSessionSecret }
        self.rawRepresentation = raw
    }

    /// Calls `body` with the UTF-8 bytes of the text form, held in wiped memory.
    ///
    /// - Parameter body: Reads the 48 bytes; the pointer must not escape.
    /// - Returns: What `body` returns.
    /// - Throws: Whatever `body` throws.
    public func withTextFormBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        let text = textFormBytes()
        return try text.withUnsafeBytes(body)
    }

    /// The text form in wiped storage.
    func textFormBytes() -> SecureBytes {
        SecureBytes(count: Self.textFormLength) { out in
            Self.prefix.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: out[0..<$0.count]).copyMemory(from: $0)
            }
            rawRepresentation.withUnsafeBytes { raw in
                let length = sodium_base64_encoded_len(raw.count, sodium_base64_VARIANT_URLSAFE_NO_PADDING)
                withUnsafeTemporaryAllocation(byteCount: length, alignment: 1) { scratch in
                    defer { sodium_memzero(scratch.baseAddress, scratch.count) }
                    _ = sodium_bin2base64(
                        scratch.baseAddress!.assumingMemoryBound(to: CChar.self), length,
                        raw.baseAddress!.assumingMemoryBound(to: UInt8.self), raw.count,
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING
                    )
                    out.baseAddress!.advanced(by: Self.prefix.count)
                        .copyMemory(from: scratch.baseAddress!, byteCount: length - 1)
                }
            }
        }
    }

    /// Returns the text form as a `String`.
    ///
    /// The one deliberate way to get the secret out as text (for `secrets show --reveal`). A
    /// Swift `String` cannot be wiped, so call this only when a person asked to see it.
    public func revealTextForm() -> String {
        withTextFormBytes { String(decoding: $0, as: UTF8.self) }
    }

    public var description: String { "SessionSecret(<redacted>)" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
