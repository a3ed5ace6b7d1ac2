/// The errors of SecretCrypto.
///
/// A small closed set. Like CryptoKit's `CryptoKitError`, it never says *which* check failed
/// when something could not be opened: a wrong key, a tampered tag, a truncated envelope, a
/// low-order ephemeral key and a plaintext that is not a session secret all surface as
/// ``authenticationFailure``. No case carries key material or plaintext.
public enum CryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A key had the wrong number of bytes.
    case invalidKeyLength(expected: Int, actual: Int)
    /// Text that should have been strict base64, base64url or hex was not.
    case invalidEncoding
    /// An X25519 exchange produced the all-zero output (the peer key is of low order).
    case lowOrderPoint
    /// A ChaCha20-Poly1305 nonce was not 12 bytes.
    case invalidNonceLength(actual: Int)
    /// HKDF was asked for more than 255 × 32 bytes.
    case outputLengthTooLarge(requested: Int, maximum: Int)
    /// A session secret's text form was not `sess_` followed by 43 base64url characters.
    case malformedSessionSecret
    /// A session id was not a UUID.
    case invalidSessionID
    /// Decryption failed: the ciphertext, key, tag or envelope did not verify.
    case authenticationFailure
    /// HPKE inputs that do not fit the mode: a sender key in a mode without one (or none in
    /// an auth mode), a PSK without its id or the reverse, a PSK in a mode without one.
    case invalidHPKEInput
    /// A version-2 envelope names a sender whose key the reader could not find.
    case unknownSender
    /// An approval request to seal is out of approvals.md's limits (a field empty, too long or
    /// holding a control character; a time or a generation out of range).
    case invalidApprovalContent
    /// The named crypto backend is not compiled into this build (libsodium on Apple platforms).
    case backendUnavailable(String)

    public var description: String {
        switch self {
        case let .invalidKeyLength(expected, actual):
            return "invalid key length: expected \(expected) bytes, got \(actual)"
        case .invalidEncoding:
            return "invalid encoding: not strict base64/hex"
        case .lowOrderPoint:
            return "X25519 produced an all-zero shared secret (low-order public key)"
        case let .invalidNonceLength(actual):
            return "invalid nonce length: expected 12 bytes, got \(actual)"
        case let .outputLengthTooLarge(requested, maximum):
            return "HKDF output of \(requested) bytes exceeds the maximum of \(maximum)"
        case .malformedSessionSecret:
            return "malformed session secret text form"
        case .invalidSessionID:
            return "session id is not a UUID"
        case .authenticationFailure:
            return "decryption failed: authentication failure"
        case .invalidHPKEInput:
            return "HPKE inputs do not fit the mode"
        case .invalidApprovalContent:
            return "the approval request is outside approvals.md's limits"
        case .unknownSender:
            return "the envelope's sender is not a known device"
        case let .backendUnavailable(name):
            let hint =
                name == CryptoBackend.swiftCrypto.rawValue
                ? "; build with SESSION_SYNC_SWIFT_CRYPTO=1 (or SESSION_SYNC_RIG=1) to add it" : ""
            return "the crypto backend \(name) is not compiled into this build\(hint)"
        }
    }
}
