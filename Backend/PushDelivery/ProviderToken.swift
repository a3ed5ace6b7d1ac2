import Crypto
import Foundation

/// The APNs signing key (`.p8`, PKCS#8 P-256). Loading refuses a file that others can read.
public struct ProviderKey: Sendable {
    /// The scalar, kept as bytes (the key type is not Sendable); a key is made at each mint.
    private let raw: Data

    public init(key: P256.Signing.PrivateKey) { raw = key.rawRepresentation }

    /// ES256 over `input`: the raw 64-byte signature.
    ///
    /// - Throws: ``ProviderTokenError`` when swift-crypto refuses the key or the signing: a
    ///   backend fault, since ``init(key:)`` is the only way in.
    func sign(_ input: [UInt8]) throws(ProviderTokenError) -> Data {
        do {
            return try P256.Signing.PrivateKey(rawRepresentation: raw).signature(for: input).rawRepresentation
        } catch {
            throw ProviderTokenError(cause: String(describing: error))
        }
    }

    /// Loads the key at `path`: the file must be readable by its owner only (mode 0600 or
    /// 0400) and hold one PEM `PRIVATE KEY`. A symbolic link (a Kubernetes secret is mounted as
    /// a chain of them) is followed, and the file it ends at is the one checked and read.
    public static func load(path given: String) throws(ConfigurationError) -> ProviderKey {
        let path = URL(fileURLWithPath: given).resolvingSymlinksInPath().path
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            attributes[.type] as? FileAttributeType == .typeRegular,
            let mode = (attributes[.posixPermissions] as? NSNumber)?.uint16Value
        else { throw ConfigurationError(variable: "APNS_KEY_PATH", problem: "names no readable file") }
        guard mode & 0o077 == 0 else {
            throw ConfigurationError(
                variable: "APNS_KEY_PATH", problem: "is readable by group or others: run chmod 600 on it")
        }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else {
            throw ConfigurationError(variable: "APNS_KEY_PATH", problem: "names no readable file")
        }
        do {
            return ProviderKey(key: try P256.Signing.PrivateKey(pemRepresentation: text))
        } catch {
            throw ConfigurationError(
                variable: "APNS_KEY_PATH", problem: "does not hold a PKCS#8 P-256 private key (.p8)")
        }
    }
}

/// A provider token could not be signed: swift-crypto refused the key or the signing, which a
/// valid key never causes. The row waits for the next try; nothing is sent unsigned.
public struct ProviderTokenError: Error, CustomStringConvertible {
    /// What swift-crypto said (an error case, never key material).
    public let cause: String
    public var description: String { "the APNs provider token could not be signed (a crypto backend fault: \(cause))" }
}

/// A minted provider token. `generation` counts mints in this process; an answer names the
/// generation it was sent with, so a burst of `ExpiredProviderToken` mints once.
public struct ProviderToken: Sendable {
    public let value: String
    public let generation: Int
    public let issuedAt: Date
}

/// The process's one provider token: minted at start, re-minted at the refresh interval and,
/// single-flight, once per burst of `ExpiredProviderToken`; never more often than APNs allows.
public actor ProviderTokens {
    private let key: ProviderKey
    private let keyID: String
    private let teamID: String
    private let refresh: Duration
    private let now: @Sendable () -> Date
    private var current: ProviderToken?
    private var mintBlockedUntil = Date.distantPast
    private var lastExpiredMint = Date.distantPast
    /// Mints so far (a test reads it; the metric counts the same).
    public private(set) var mints = 0

    /// The shortest time between two mints caused by `ExpiredProviderToken`. A fresh token
    /// that is refused as expired means a clock problem, which another mint would not fix.
    static let minimumExpiredRemint: TimeInterval = 60

    public init(
        key: ProviderKey, keyID: String, teamID: String, refresh: Duration,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.refresh = refresh
        self.now = now
    }

    /// The token to send now: the current one unless it is older than the refresh interval.
    ///
    /// - Throws: ``ProviderTokenError`` when a mint is due and cannot be signed.
    public func token() throws(ProviderTokenError) -> ProviderToken {
        let time = now()
        if let current, time.timeIntervalSince(current.issuedAt) < refresh.seconds || time < mintBlockedUntil {
            return current
        }
        return try mint(at: time)
    }

    /// APNs answered `ExpiredProviderToken` to a request sent with `generation`. Mints once:
    /// an answer about an older generation, or one within a minute of the last such mint,
    /// gets the current token.
    ///
    /// - Throws: ``ProviderTokenError`` when the mint cannot be signed.
    public func expired(generation: Int) throws(ProviderTokenError) -> ProviderToken {
        let time = now()
        guard let current else { return try mint(at: time) }
        guard generation == current.generation, time >= mintBlockedUntil,
            time.timeIntervalSince(lastExpiredMint) >= Self.minimumExpiredRemint
        else { return current }
        let token = try mint(at: time)
        lastExpiredMint = time
        return token
    }

    /// APNs answered `TooManyProviderTokenUpdates`: no new token for `duration`.
    public func blockMinting(for duration: Duration) {
        mintBlockedUntil = max(mintBlockedUntil, now().addingTimeInterval(duration.seconds))
    }

    private func mint(at time: Date) throws(ProviderTokenError) -> ProviderToken {
        let issued = Date(timeIntervalSince1970: time.timeIntervalSince1970.rounded(.down))
        let header = #"{"alg":"ES256","kid":"\#(keyID)"}"#
        let claims = #"{"iss":"\#(teamID)","iat":\#(Int(issued.timeIntervalSince1970))}"#
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try key.sign(Array(input.utf8))
        mints += 1
        let token = ProviderToken(
            value: input + "." + Base64URL.encode(Array(signature)), generation: (current?.generation ?? 0) + 1,
            issuedAt: issued)
        current = token
        PushMetrics.providerTokenMints.increment()
        return token
    }
}

enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
            of: "/", with: "_"
        )
        .replacingOccurrences(of: "=", with: "")
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
