import Foundation

/// RFC 9180 Hybrid Public Key Encryption, suite A.2 only: DHKEM(X25519, HKDF-SHA256) (0x0020),
/// HKDF-SHA256 (0x0001), ChaCha20-Poly1305 (0x0003), in all four modes, over the crypto
/// backend's primitives (``CryptoBackend``).
///
/// ```swift
/// // The recipient learns that `sender` sealed this (auth mode).
/// let (enc, ct) = try HPKE.seal(mode: .auth, to: recipient.publicKey, info: info, plaintext: pt, sender: sender)
/// let pt = try HPKE.open(mode: .auth, encapsulatedKey: enc, ciphertext: ct, recipient: recipient, info: info,
///                        sender: sender.publicKey)
/// ```
///
/// Every X25519 output inside the KEM that is all zero aborts with ``CryptoError/lowOrderPoint``
/// (RFC 9180 §7.1.4); some implementations skip that check, this one does not. Opening fails
/// with ``CryptoError/authenticationFailure`` whatever the reason. Deterministic key derivation
/// and sealing with a given ephemeral key have `package` access: the vector tools and tests in this package use them, no app can.
public enum HPKE {
    /// The four modes of RFC 9180 §5.
    public enum Mode: UInt8, Sendable, CaseIterable {
        case base = 0x00
        case psk = 0x01
        case auth = 0x02
        case authPSK = 0x03

        var usesPSK: Bool { self == .psk || self == .authPSK }
        var authenticatesSender: Bool { self == .auth || self == .authPSK }
    }

    /// The one ciphersuite: KEM, KDF and AEAD identifiers.
    public static let kemID: UInt16 = 0x0020
    public static let kdfID: UInt16 = 0x0001
    public static let aeadID: UInt16 = 0x0003

    /// `Nenc`, `Nk`, `Nn`, `Nh`.
    public static let encapsulatedKeyByteCount = 32
    static let keyByteCount = 32
    static let nonceByteCount = 12
    static let hashByteCount = 32

    static let kemSuite: [UInt8] = Array("KEM".utf8) + [0x00, 0x20]
    static let hpkeSuite: [UInt8] = Array("HPKE".utf8) + [0x00, 0x20, 0x00, 0x01, 0x00, 0x03]
    static let version: [UInt8] = Array("HPKE-v1".utf8)

    // MARK: - Single shot

    /// Seals `plaintext` to `recipient` in one call (RFC 9180 §6.1).
    ///
    /// - Parameters:
    ///   - mode: `.auth`/`.authPSK` need `sender`; `.psk`/`.authPSK` need `psk` and `pskID`.
    ///   - recipient: `pkR`.
    ///   - info: Application context bound into the key schedule.
    ///   - aad: Associated data of this one message.
    ///   - plaintext: The message.
    ///   - sender: `skS`, the sender's static key, for the auth modes.
    ///   - psk: The pre-shared key (at least 32 bytes in practice), for the PSK modes.
    ///   - pskID: Its identifier.
    /// - Returns: `enc` (32 bytes) and the ciphertext (plaintext + 16 bytes).
    /// - Throws: ``CryptoError/lowOrderPoint`` for a low-order `recipient` (or any all-zero DH),
    ///   ``CryptoError/invalidHPKEInput`` for inputs that do not fit the mode.
    public static func seal(
        mode: Mode, to recipient: X25519PublicKey, info: some ContiguousBytes, aad: some ContiguousBytes = [UInt8](),
        plaintext: some ContiguousBytes, sender: X25519PrivateKey? = nil, psk: SecureBytes? = nil, pskID: [UInt8] = []
    ) throws -> (encapsulatedKey: [UInt8], ciphertext: [UInt8]) {
        var context = try SenderContext(
            mode: mode, recipient: recipient, info: info, sender: sender, psk: psk, pskID: pskID,
            ephemeral: X25519PrivateKey(), withExporter: false)
        return (context.encapsulatedKey, try context.seal(plaintext, aad: aad))
    }

    /// Opens what ``seal(mode:to:info:aad:plaintext:sender:psk:pskID:)`` produced.
    ///
    /// - Returns: The plaintext, in self-wiping memory.
    /// - Throws: ``CryptoError/authenticationFailure`` whatever failed (a wrong key, sender,
    ///   info, aad or PSK, a modified ciphertext, a low-order `enc`); ``CryptoError/invalidHPKEInput``
    ///   for inputs that do not fit the mode.
    public static func open(
        mode: Mode, encapsulatedKey: some ContiguousBytes, ciphertext: some ContiguousBytes,
        recipient: X25519PrivateKey,
        info: some ContiguousBytes, aad: some ContiguousBytes = [UInt8](), sender: X25519PublicKey? = nil,
        psk: SecureBytes? = nil, pskID: [UInt8] = []
    ) throws -> SecureBytes {
        try open(
            mode: mode, encapsulatedKey: encapsulatedKey, ciphertext: ciphertext, recipient: recipient, info: info,
            aad: aad,
            sender: sender, senderExchange: nil, psk: psk, pskID: pskID)
    }

    /// ``open(mode:encapsulatedKey:ciphertext:recipient:info:aad:sender:psk:pskID:)`` with
    /// `DH(skR, pkS)` computed before, for many messages of one sender.
    static func open(
        mode: Mode, encapsulatedKey: some ContiguousBytes, ciphertext: some ContiguousBytes,
        recipient: X25519PrivateKey,
        info: some ContiguousBytes, aad: some ContiguousBytes = [UInt8](), sender: X25519PublicKey?,
        senderExchange: SecureBytes?,
        psk: SecureBytes? = nil, pskID: [UInt8] = []
    ) throws -> SecureBytes {
        var context = try RecipientContext(
            mode: mode, encapsulatedKey: encapsulatedKey, recipient: recipient, info: info,
            sender: sender, senderExchange: senderExchange, psk: psk, pskID: pskID, withExporter: false)
        return try context.open(ciphertext, aad: aad)
    }

    // MARK: - Deterministic, for test vectors only

    /// `DeriveKeyPair(ikm)` of DHKEM(X25519, HKDF-SHA256) (RFC 9180 §7.1.3).
    package static func deriveKeyPair(ikm: some ContiguousBytes) throws -> X25519PrivateKey {
        let prk = labeledExtract(suite: kemSuite, salt: [], label: "dkp_prk", ikm: ikm)
        let secret = labeledExpand(suite: kemSuite, prk: prk, label: "sk", info: [UInt8](), length: 32)
        return try X25519PrivateKey(rawRepresentation: secret)
    }

    /// A sender context with a given ephemeral key: reusing one breaks the scheme.
    package static func deterministicSender(
        mode: Mode, to recipient: X25519PublicKey, info: some ContiguousBytes, sender: X25519PrivateKey? = nil,
        psk: SecureBytes? = nil, pskID: [UInt8] = [], ephemeral: X25519PrivateKey
    ) throws -> SenderContext {
        try SenderContext(
            mode: mode, recipient: recipient, info: info, sender: sender, psk: psk, pskID: pskID,
            ephemeral: ephemeral, withExporter: true)
    }

    // MARK: - Labeled HKDF (RFC 9180 §4)

    /// HMAC keyed with the empty salt (RFC 9180's extracts with salt `""`): keyed once.
    static let emptySalt = [UInt8]().withUnsafeBytes { HMACKey($0) }

    static func labeledExtract(
        suite: [UInt8], salt: some ContiguousBytes, label: StaticString, ikm: some ContiguousBytes
    ) -> SecureBytes {
        SecureBytes(count: hashByteCount) { out in
            salt.withUnsafeBytes { salt in
                version.withUnsafeBytes { version in
                    suite.withUnsafeBytes { suite in
                        label.withUTF8Buffer { label in
                            ikm.withUnsafeBytes { ikm in
                                let parts = [version, suite, UnsafeRawBufferPointer(label), ikm]
                                if salt.isEmpty {
                                    emptySalt.mac(parts: parts, into: out.baseAddress!)
                                } else {
                                    HKDFSHA256.extract(salt: salt, ikm: parts, into: out.baseAddress!)
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    static func labeledExpand(
        suite: [UInt8], prk: SecureBytes, label: StaticString, info: some ContiguousBytes, length: Int
    ) -> SecureBytes {
        SecureBytes(count: length) { out in
            let lengthBytes: [UInt8] = [UInt8(length >> 8), UInt8(length & 0xFF)]
            prk.withUnsafeBytes { prk in
                lengthBytes.withUnsafeBytes { lengthBytes in
                    version.withUnsafeBytes { version in
                        suite.withUnsafeBytes { suite in
                            label.withUTF8Buffer { label in
                                info.withUnsafeBytes { info in
                                    HKDFSHA256.expand(
                                        prk: prk,
                                        info: [lengthBytes, version, suite, UnsafeRawBufferPointer(label), info],
                                        into: out)
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// ``labeledExpand(suite:prk:label:info:length:)`` of at most one block (32 bytes) with the
    /// PRK keyed once, for several expansions of one PRK.
    static func labeledExpand(
        suite: [UInt8], keyed prk: HMACKey, label: StaticString, info: some ContiguousBytes, length: Int
    ) -> SecureBytes {
        precondition(length <= hashByteCount, "one block at most")
        return SecureBytes(count: length) { out in
            withUnsafeTemporaryAllocation(byteCount: hashByteCount, alignment: 16) { block in
                defer { Primitives.wipe(block) }
                let prefix: [UInt8] = [UInt8(length >> 8), UInt8(length & 0xFF)]
                var counter: UInt8 = 1
                prefix.withUnsafeBytes { prefix in
                    version.withUnsafeBytes { version in
                        suite.withUnsafeBytes { suite in
                            label.withUTF8Buffer { label in
                                info.withUnsafeBytes { info in
                                    withUnsafeBytes(of: &counter) { counter in
                                        prk.mac(
                                            parts: [
                                                prefix, version, suite, UnsafeRawBufferPointer(label), info, counter,
                                            ],
                                            into: block.baseAddress!)
                                    }
                                }
                            }
                        }
                    }
                }
                out.baseAddress!.copyMemory(from: block.baseAddress!, byteCount: length)
            }
        }
    }

    // MARK: - DHKEM(X25519, HKDF-SHA256) (RFC 9180 §4.1)

    /// `ExtractAndExpand(dh, kem_context)`.
    static func sharedSecret(dh: SecureBytes, kemContext: [UInt8]) -> SecureBytes {
        let prk = labeledExtract(suite: kemSuite, salt: [UInt8](), label: "eae_prk", ikm: dh)
        let keyed = prk.withUnsafeBytes { HMACKey($0) }
        return labeledExpand(
            suite: kemSuite, keyed: keyed, label: "shared_secret", info: kemContext, length: hashByteCount)
    }

    /// `Encap` / `AuthEncap`: the shared secret and `enc`.
    ///
    /// `staticExchange`, when given, is `DH(skS, pkR)` computed before
    /// (``staticExchange(sender:recipient:)``): the same for every message one sender seals to
    /// one recipient.
    static func encapsulate(
        to recipient: X25519PublicKey, ephemeral: X25519PrivateKey, sender: X25519PrivateKey?,
        staticExchange: SecureBytes? = nil
    ) throws
        -> (shared: SecureBytes, enc: [UInt8])
    {
        let enc = ephemeral.publicKey.rawRepresentation
        let dh = try SecureBytes(count: sender == nil ? 32 : 64) { out in
            try ephemeral.rawRepresentation.withUnsafeBytes { skE in
                try X25519.exchange(
                    into: out.baseAddress!, privateKey: skE.baseAddress!, publicKey: recipient.rawRepresentation)
            }
            if sender != nil, let staticExchange, staticExchange.count == 32 {
                staticExchange.withUnsafeBytes {
                    out.baseAddress!.advanced(by: 32).copyMemory(from: $0.baseAddress!, byteCount: 32)
                }
            } else if let sender {
                try sender.rawRepresentation.withUnsafeBytes { skS in
                    try X25519.exchange(
                        into: out.baseAddress! + 32, privateKey: skS.baseAddress!,
                        publicKey: recipient.rawRepresentation)
                }
            }
        }
        var kemContext = enc
        kemContext.reserveCapacity(3 * encapsulatedKeyByteCount)
        kemContext += recipient.rawRepresentation
        if let sender { kemContext += sender.publicKey.rawRepresentation }
        return (sharedSecret(dh: dh, kemContext: kemContext), enc)
    }

    /// `Decap` / `AuthDecap`. `senderExchange`, when given, is `DH(skR, pkS)` computed before
    /// (``staticExchange(recipient:sender:)``): the same for every message of one sender.
    static func decapsulate(
        _ enc: [UInt8], recipient: X25519PrivateKey, sender: X25519PublicKey?,
        senderExchange: SecureBytes? = nil
    ) throws -> SecureBytes {
        let dh = try SecureBytes(count: sender == nil ? 32 : 64) { out in
            try recipient.rawRepresentation.withUnsafeBytes { skR in
                try X25519.exchange(into: out.baseAddress!, privateKey: skR.baseAddress!, publicKey: enc)
                // Only in auth mode (a sender) is there room for the second exchange.
                if sender != nil, let senderExchange, senderExchange.count == 32 {
                    senderExchange.withUnsafeBytes {
                        out.baseAddress!.advanced(by: 32).copyMemory(from: $0.baseAddress!, byteCount: 32)
                    }
                } else if let sender {
                    try X25519.exchange(
                        into: out.baseAddress! + 32, privateKey: skR.baseAddress!, publicKey: sender.rawRepresentation)
                }
            }
        }
        var kemContext = enc
        kemContext.reserveCapacity(3 * encapsulatedKeyByteCount)
        kemContext += recipient.publicKey.rawRepresentation
        if let sender { kemContext += sender.rawRepresentation }
        return sharedSecret(dh: dh, kemContext: kemContext)
    }

    /// `DH(skS, pkR)`, the static part of `AuthEncap` (equal to `DH(skR, pkS)`).
    ///
    /// - Throws: ``CryptoError/lowOrderPoint`` for a low-order recipient key.
    static func staticExchange(sender: X25519PrivateKey, recipient: X25519PublicKey) throws -> SecureBytes {
        try SecureBytes(count: 32) { out in
            try sender.rawRepresentation.withUnsafeBytes { skS in
                try X25519.exchange(
                    into: out.baseAddress!, privateKey: skS.baseAddress!, publicKey: recipient.rawRepresentation)
            }
        }
    }

    /// `DH(skR, pkS)`, the static part of `AuthDecap`.
    ///
    /// - Throws: ``CryptoError/authenticationFailure`` for a low-order sender key.
    static func staticExchange(recipient: X25519PrivateKey, sender: X25519PublicKey) throws -> SecureBytes {
        do {
            return try SecureBytes(count: 32) { out in
                try recipient.rawRepresentation.withUnsafeBytes { skR in
                    try X25519.exchange(
                        into: out.baseAddress!, privateKey: skR.baseAddress!, publicKey: sender.rawRepresentation)
                }
            }
        } catch {
            throw CryptoError.authenticationFailure
        }
    }

    // MARK: - Key schedule (RFC 9180 §5.1)

    struct Schedule {
        let key: SecureBytes
        let baseNonce: SecureBytes
        let exporterSecret: SecureBytes?
    }

    /// `psk_id_hash` of the empty `psk_id` (modes without a PSK): the same for every message.
    static let emptyPSKIDHash = labeledExtract(suite: hpkeSuite, salt: [UInt8](), label: "psk_id_hash", ikm: [UInt8]())

    static func schedule(
        mode: Mode, shared: SecureBytes, info: some ContiguousBytes, psk: SecureBytes?, pskID: [UInt8],
        withExporter: Bool
    ) throws -> Schedule {
        let pskBytes = psk ?? SecureBytes(copying: [UInt8]())
        let gotPSK = pskBytes.count > 0
        let gotPSKID = !pskID.isEmpty
        guard gotPSK == gotPSKID, gotPSK == mode.usesPSK else { throw CryptoError.invalidHPKEInput }
        let pskIDHash =
            gotPSKID
            ? labeledExtract(suite: hpkeSuite, salt: [UInt8](), label: "psk_id_hash", ikm: pskID) : emptyPSKIDHash
        let infoHash = labeledExtract(suite: hpkeSuite, salt: [UInt8](), label: "info_hash", ikm: info)
        var context: [UInt8] = [mode.rawValue]
        context.reserveCapacity(1 + 2 * hashByteCount)
        pskIDHash.withUnsafeBytes { context += $0 }
        infoHash.withUnsafeBytes { context += $0 }
        let secret = labeledExtract(suite: hpkeSuite, salt: shared, label: "secret", ikm: pskBytes)
        // `secret` keys two or three expansions: keyed once.
        let keyed = secret.withUnsafeBytes { HMACKey($0) }
        return Schedule(
            key: labeledExpand(suite: hpkeSuite, keyed: keyed, label: "key", info: context, length: keyByteCount),
            baseNonce: labeledExpand(
                suite: hpkeSuite, keyed: keyed, label: "base_nonce", info: context, length: nonceByteCount),
            exporterSecret: withExporter
                ? labeledExpand(suite: hpkeSuite, keyed: keyed, label: "exp", info: context, length: hashByteCount)
                : nil
        )
    }

    /// `base_nonce XOR I2OSP(seq, Nn)`.
    static func nonce(_ base: SecureBytes, sequence: UInt64) -> [UInt8] {
        var nonce = base.withUnsafeBytes { Array($0) }
        for index in 0..<8 {
            nonce[nonceByteCount - 1 - index] ^= UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(index)))
        }
        return nonce
    }

    /// `Export(exporter_context, L)`.
    static func export(_ exporterSecret: SecureBytes?, context: some ContiguousBytes, length: Int) throws -> SecureBytes
    {
        guard let exporterSecret else { throw CryptoError.invalidHPKEInput }
        guard length >= 0, length <= 255 * hashByteCount else {
            throw CryptoError.outputLengthTooLarge(requested: length, maximum: 255 * hashByteCount)
        }
        return labeledExpand(suite: hpkeSuite, prk: exporterSecret, label: "sec", info: context, length: length)
    }

    // MARK: - Contexts

    /// The sender's side of an HPKE context: seals messages in order, exports secrets.
    public struct SenderContext: Sendable {
        /// `enc`, to send with the ciphertexts.
        public let encapsulatedKey: [UInt8]
        let schedule: Schedule
        var sequence: UInt64 = 0

        init(
            mode: Mode, recipient: X25519PublicKey, info: some ContiguousBytes, sender: X25519PrivateKey?,
            psk: SecureBytes?,
            pskID: [UInt8], ephemeral: X25519PrivateKey, withExporter: Bool, staticExchange: SecureBytes? = nil
        ) throws {
            guard (sender != nil) == mode.authenticatesSender else { throw CryptoError.invalidHPKEInput }
            let (shared, enc) = try HPKE.encapsulate(
                to: recipient, ephemeral: ephemeral, sender: sender, staticExchange: staticExchange)
            encapsulatedKey = enc
            schedule = try HPKE.schedule(
                mode: mode, shared: shared, info: info, psk: psk, pskID: pskID, withExporter: withExporter)
        }

        /// Seals the next message.
        public mutating func seal(
            _ plaintext: some ContiguousBytes, aad: some ContiguousBytes = [UInt8]()
        ) throws -> [UInt8] {
            guard sequence < UInt64.max else { throw CryptoError.invalidHPKEInput }
            let nonce = HPKE.nonce(schedule.baseNonce, sequence: sequence)
            let sealed = plaintext.withUnsafeBytes { plaintext in
                aad.withUnsafeBytes { aad in
                    schedule.key.withUnsafeBytes { key in
                        [UInt8](unsafeUninitializedCapacity: plaintext.count + ChaCha20Poly1305.tagByteCount) {
                            out, count in
                            nonce.withUnsafeBytes { nonce in
                                ChaCha20Poly1305.encrypt(
                                    message: plaintext, aad: aad, nonce: nonce.baseAddress!, key: key.baseAddress!,
                                    into: UnsafeMutableRawPointer(out.baseAddress!))
                            }
                            count = plaintext.count + ChaCha20Poly1305.tagByteCount
                        }
                    }
                }
            }
            sequence += 1
            return sealed
        }

        /// `Export(exporter_context, L)`.
        public func exportSecret(context: some ContiguousBytes, outputByteCount: Int) throws -> SecureBytes {
            try HPKE.export(schedule.exporterSecret, context: context, length: outputByteCount)
        }

        /// The key schedule's outputs, for test vectors only.
        package var scheduleForTesting: (key: SecureBytes, baseNonce: SecureBytes, exporterSecret: SecureBytes?) {
            (schedule.key, schedule.baseNonce, schedule.exporterSecret)
        }
    }

    /// The recipient's side of an HPKE context: opens messages in order, exports secrets.
    public struct RecipientContext: Sendable {
        let schedule: Schedule
        var sequence: UInt64 = 0

        /// Sets up the recipient (`SetupBaseR` ... `SetupAuthPSKR`).
        ///
        /// - Throws: ``CryptoError/authenticationFailure`` for a low-order `enc` or sender key;
        ///   ``CryptoError/invalidHPKEInput`` for inputs that do not fit the mode.
        public init(
            mode: Mode, encapsulatedKey: some ContiguousBytes, recipient: X25519PrivateKey, info: some ContiguousBytes,
            sender: X25519PublicKey? = nil, psk: SecureBytes? = nil, pskID: [UInt8] = []
        ) throws {
            try self.init(
                mode: mode, encapsulatedKey: encapsulatedKey, recipient: recipient, info: info, sender: sender,
                psk: psk, pskID: pskID, withExporter: true)
        }

        init(
            mode: Mode, encapsulatedKey: some ContiguousBytes, recipient: X25519PrivateKey, info: some ContiguousBytes,
            sender: X25519PublicKey?, senderExchange: SecureBytes? = nil, psk: SecureBytes?, pskID: [UInt8],
            withExporter: Bool
        ) throws {
            guard (sender != nil) == mode.authenticatesSender else { throw CryptoError.invalidHPKEInput }
            let enc = encapsulatedKey.withUnsafeBytes { Array($0) }
            guard enc.count == HPKE.encapsulatedKeyByteCount else { throw CryptoError.authenticationFailure }
            let shared: SecureBytes
            do {
                shared = try HPKE.decapsulate(enc, recipient: recipient, sender: sender, senderExchange: senderExchange)
            } catch {
                throw CryptoError.authenticationFailure
            }
            schedule = try HPKE.schedule(
                mode: mode, shared: shared, info: info, psk: psk, pskID: pskID, withExporter: withExporter)
        }

        /// Opens the next message.
        ///
        /// - Throws: ``CryptoError/authenticationFailure``.
        public mutating func open(
            _ ciphertext: some ContiguousBytes, aad: some ContiguousBytes = [UInt8]()
        ) throws -> SecureBytes {
            let nonce = HPKE.nonce(schedule.baseNonce, sequence: sequence)
            let opened = try ciphertext.withUnsafeBytes { sealed in
                guard sealed.count >= ChaCha20Poly1305.tagByteCount else { throw CryptoError.authenticationFailure }
                return try aad.withUnsafeBytes { aad in
                    try schedule.key.withUnsafeBytes { key in
                        try SecureBytes(count: sealed.count - ChaCha20Poly1305.tagByteCount) { out in
                            try nonce.withUnsafeBytes { nonce in
                                try ChaCha20Poly1305.decrypt(
                                    sealed: sealed, aad: aad, nonce: nonce.baseAddress!, key: key.baseAddress!,
                                    into: out.baseAddress)
                            }
                        }
                    }
                }
            }
            sequence += 1
            return opened
        }

        /// `Export(exporter_context, L)`.
        public func exportSecret(context: some ContiguousBytes, outputByteCount: Int) throws -> SecureBytes {
            try HPKE.export(schedule.exporterSecret, context: context, length: outputByteCount)
        }
    }
}

extension SecureBytes: ContiguousBytes {}
