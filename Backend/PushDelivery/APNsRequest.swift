import Crypto
import Foundation

/// The kinds of push the outbox holds (`push_outbox.push_type`).
public enum PushType: String, Sendable, CaseIterable {
    case alert, background, liveactivity
}

/// One claimed outbox row, with its token's environment as read at claim time.
public struct OutboxRow: Sendable {
    public var id: Int64
    public var token: String
    public var pushType: PushType
    public var priority: Int
    public var collapseID: String?
    /// The payload as PostgreSQL prints `jsonb` (compacted before sending).
    public var payload: String
    public var apnsID: UUID
    public var expiresAt: Date?
    public var createdAt: Date
    /// Attempts including this one.
    public var attempts: Int
    /// `development` or `production`: where the token was registered.
    public var environment: String
    /// When the row became due, `greatest(created_at, not_before)` (`createdAt` when unknown).
    public var dueAt: Date

    public init(
        id: Int64, token: String, pushType: PushType, priority: Int, collapseID: String?, payload: String, apnsID: UUID,
        expiresAt: Date?, createdAt: Date, attempts: Int, environment: String, dueAt: Date? = nil
    ) {
        self.id = id
        self.token = token
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.payload = payload
        self.apnsID = apnsID
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.attempts = attempts
        self.environment = environment
        self.dueAt = dueAt ?? createdAt
    }

    /// The token's last six characters: all a log line may show of it.
    public var tokenSuffix: String { "…" + token.suffix(6) }
}

/// One request to APNs: `POST /3/device/<token>` with its headers and body.
public struct APNsRequest: Sendable {
    public var path: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    /// The largest body APNs takes (and this worker sends).
    public static let maximumPayload = 4096

    public enum Refusal: Error, Equatable {
        /// The compacted payload is over 4,096 bytes: never sent.
        case payloadTooLarge(Int)
        /// The payload is not a JSON object, so what it would display cannot be checked: never sent.
        case payloadNotAnObject
    }

    /// The request for `row`, sent with `providerToken` at `now`. What a lock screen would show of
    /// the payload passes through the sanitiser first (``DisplayedText``).
    public static func make(
        row: OutboxRow, bundleID: String, providerToken: String, now: Date = Date()
    ) throws(Refusal) -> APNsRequest {
        guard let shown = DisplayedText.sanitised(payload: Array(row.payload.utf8)) else { throw .payloadNotAnObject }
        let body = compactJSON(shown)
        guard body.count <= maximumPayload else { throw .payloadTooLarge(body.count) }
        let nowSeconds = Int(now.timeIntervalSince1970)
        let expiration: Int
        let priority: Int
        let topic: String
        switch row.pushType {
        case .background:
            expiration = nowSeconds + 3600
            priority = 5
            topic = bundleID
        case .alert:
            expiration = row.expiresAt.map { Int($0.timeIntervalSince1970) } ?? nowSeconds + 3600
            // The row's priority: 5 for a passive alert (notifications round 2), else 10.
            priority = row.priority == 5 ? 5 : 10
            topic = bundleID
        case .liveactivity:
            expiration = nowSeconds + 300
            priority = row.priority == 5 ? 5 : 10
            topic = bundleID + ".push-type.liveactivity"
        }
        var headers: [(String, String)] = [
            ("authorization", "bearer " + providerToken),
            ("apns-push-type", row.pushType.rawValue),
            ("apns-topic", topic),
            ("apns-id", row.apnsID.uuidString.lowercased()),
            ("apns-priority", String(priority)),
            ("apns-expiration", String(max(0, expiration))),
        ]
        if let collapse = row.collapseID { headers.append(("apns-collapse-id", collapseID(collapse))) }
        headers.append(("content-type", "application/json"))
        return APNsRequest(path: "/3/device/" + row.token, headers: headers, body: body)
    }

    /// The `apns-collapse-id` for a stored collapse id: itself when it is at most 64 bytes of
    /// printable ASCII, else `c-` and the first 43 characters of base64url(SHA-256(stored)):
    /// 45 bytes, the same on every retry.
    public static func collapseID(_ stored: String) -> String {
        let bytes = Array(stored.utf8)
        if !bytes.isEmpty, bytes.count <= 64, bytes.allSatisfy({ (0x20...0x7E).contains($0) }) { return stored }
        return "c-" + Base64URL.encode(Array(SHA256.hash(data: bytes))).prefix(43)
    }

    /// JSON without the whitespace between tokens (PostgreSQL prints `jsonb` with spaces).
    /// Strings are kept byte for byte; the order of keys is the stored one.
    public static func compactJSON(_ text: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var inString = false
        var escaped = false
        for byte in text {
            if inString {
                out.append(byte)
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case 0x20, 0x0A, 0x0D, 0x09: continue
            case UInt8(ascii: "\""):
                inString = true
                out.append(byte)
            default: out.append(byte)
            }
        }
        return out
    }
}

/// What APNs answered: the status, and the body's `reason` and `timestamp` when it had them.
public struct APNsResponse: Sendable, Equatable {
    public var status: Int
    public var reason: String?
    /// For 410: when APNs last knew the token was not valid.
    public var timestamp: Date?

    public init(status: Int, reason: String? = nil, timestamp: Date? = nil) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
    }

    /// Reads APNs' error body, `{"reason":"...","timestamp":ms}`; anything else is no reason.
    public init(status: Int, body: [UInt8]) {
        self.init(status: status)
        guard !body.isEmpty, let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return
        }
        if let reason = object["reason"] as? String, reason.utf8.count <= 64,
            reason.unicodeScalars.allSatisfy({ $0.isASCII && $0.properties.isAlphabetic || ("0"..."9").contains($0) })
        {
            self.reason = reason
        }
        if let milliseconds = object["timestamp"] as? NSNumber {
            timestamp = Date(timeIntervalSince1970: milliseconds.doubleValue / 1000)
        }
    }
}

/// What the worker does with an answer (push-delivery.md's table).
public enum AnswerAction: Equatable, Sendable {
    case delivered
    /// 410, and 400 `BadDeviceToken` / `DeviceTokenNotForTopic`: the token is no longer valid
    /// (for 410, unless re-registered after `since`); the row is done.
    case invalidateToken(since: Date?)
    /// Our own mistake (400 other reasons, 404, 405, 413): dead-letter the row, log an error,
    /// leave the token alone.
    case deadLetter
    /// Send again on a fresh connection, same apns-id (400 `IdleTimeout`, 503, transport faults).
    case retryTransient
    /// 500: back off with jitter.
    case retryServerError
    /// 403 `ExpiredProviderToken`: a new provider token (single-flight), resend, no attempt charged.
    case refreshProviderToken
    /// 403 `InvalidProviderToken` / `MissingProviderToken`: stop sending; rows stay pending.
    case openCircuit
    /// 429 `TooManyRequests`: back off this device token only.
    case throttleDeviceToken
    /// 429 `TooManyProviderTokenUpdates`: no new token; back off minutes, resend with the current one.
    case throttleProviderTokenUpdates

    public init(_ response: APNsResponse) {
        switch (response.status, response.reason) {
        case (200, _): self = .delivered
        case (410, _): self = .invalidateToken(since: response.timestamp)
        case (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"): self = .invalidateToken(since: nil)
        case (400, "IdleTimeout"): self = .retryTransient
        case (403, "ExpiredProviderToken"): self = .refreshProviderToken
        case (403, "InvalidProviderToken"), (403, "MissingProviderToken"): self = .openCircuit
        case (429, "TooManyProviderTokenUpdates"): self = .throttleProviderTokenUpdates
        case (429, _): self = .throttleDeviceToken
        case (500, _): self = .retryServerError
        case (503, _): self = .retryTransient
        case (400, _), (404, _), (405, _), (413, _): self = .deadLetter
        // 403 with another reason (BadCertificate, Forbidden...) is about our credentials: stop.
        case (403, _): self = .openCircuit
        default: self = .retryServerError
        }
    }
}
