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
        guard var decoded = Primitives.backend.decodeBase64(encoded, urlSafe: true) else {
            throw CryptoError.malformedSessionSecret
        }
        defer { decoded.withUnsafeMutableBytes { Primitives.wipe($0) } }
        guard decoded.count == Self.byteCount else { throw CryptoError.malformedSessionSecret }
        self.rawRepresentation = SecureBytes(copying: decoded)
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
                var text = Primitives.backend.base64(raw, urlSafe: true)
                defer { text.withUnsafeMutableBytes { Primitives.wipe($0) } }
                text.withUnsafeBytes {
                    out.baseAddress!.advanced(by: Self.prefix.count).copyMemory(
                        from: $0.baseAddress!, byteCount: $0.count)
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
