import Foundation
import SecretCrypto

/// An answer to an approval request (approvals.md), signed with the answering device's Ed25519
/// signing key.
///
/// ```
/// "unbound-approval-decision-v2" || 0x00 || user_id || 0x00 || session_id || 0x00
///   || request_id || 0x00 || device_id || 0x00 || verdict (1 byte: 0x01 approve, 0x02 deny)
///   || SHA-256(the decoded request body) (32) || read (32) || decided_at (8 bytes, BE)
///   || epoch (4) || log_seq (8) || log_hash (32)
/// ```
/// Version 2 (approvals.md) carries the answering device's pinned trust-log head; a
/// version-1 decision (`unbound-approval-decision-v1`, without it) still parses, and every
/// desktop refuses it.
public struct ApprovalDecision: Sendable, Hashable {
    /// The version-1 prefix (no trust-log head).
    public static let prefix = "unbound-approval-decision-v1"
    /// The version-2 prefix.
    public static let prefixV2 = "unbound-approval-decision-v2"

    /// The answering device's pinned trust-log head.
    public struct LogHead: Sendable, Hashable {
        public var epoch: UInt32
        public var seq: UInt64
        public var hash: [UInt8]

        public init(epoch: UInt32, seq: UInt64, hash: [UInt8]) {
            self.epoch = epoch
            self.seq = seq
            self.hash = hash
        }
    }

    /// What the person answered.
    public enum Verdict: UInt8, Sendable, Hashable, CaseIterable {
        case approve = 0x01
        case deny = 0x02
    }

    public var userID: UUID
    public var sessionID: UUID
    public var requestID: UUID
    /// The answering device.
    public var deviceID: UUID
    public var verdict: Verdict
    /// SHA-256 of the request body the answer is about.
    public var bodyHash: [UInt8]
    /// `HMAC-SHA256(K, ...)`: proof the answering device derived the request's key.
    public var read: [UInt8]
    /// When it was answered, in Unix seconds (below 2^63).
    public var decidedAt: UInt64
    /// Version 2: the answering device's pinned trust-log head; `nil` for version 1.
    public var logHead: LogHead?

    /// Creates a decision (version 2 when `logHead` is given).
    public init(
        userID: UUID, sessionID: UUID, requestID: UUID, deviceID: UUID, verdict: Verdict, bodyHash: [UInt8],
        read: [UInt8], decidedAt: UInt64, logHead: LogHead? = nil
    ) {
        self.logHead = logHead
        self.userID = userID
        self.sessionID = sessionID
        self.requestID = requestID
        self.deviceID = deviceID
        self.verdict = verdict
        self.bodyHash = bodyHash
        self.read = read
        self.decidedAt = decidedAt
    }

    /// The exact bytes that are signed.
    public func body() -> [UInt8] {
        var out = StatementWriter(prefix: logHead == nil ? Self.prefix : Self.prefixV2)
        for id in [userID, sessionID, requestID, deviceID] {
            out.identifier(id)
            out.separator()
        }
        out.bytes([verdict.rawValue])
        out.bytes(bodyHash)
        out.bytes(read)
        out.integer(decidedAt)
        if let logHead {
            out.bytes((0..<4).map { UInt8(truncatingIfNeeded: logHead.epoch >> (24 - 8 * $0)) })
            out.integer(logHead.seq)
            out.bytes(logHead.hash)
        }
        return out.bytes
    }

    /// Parses a body strictly: exact prefix and separators, canonical lowercase identifiers, a
    /// known verdict, exact lengths, a time below 2^63, nothing after.
    public static func parse(_ bytes: [UInt8]) throws(DeviceTrustError) -> ApprovalDecision {
        var reader = StatementReader(bytes)
        let v2 = bytes.starts(with: Array(prefixV2.utf8) + [0])
        try reader.prefix(v2 ? prefixV2 : prefix)
        var ids: [UUID] = []
        for _ in 0..<4 {
            ids.append(try reader.identifier())
            try reader.separator()
        }
        guard let verdict = Verdict(rawValue: try reader.take(1).first!) else {
            throw DeviceTrustError(.invalidText, "the decision's verdict is neither approve nor deny")
        }
        let hash = Array(try reader.take(32))
        let read = Array(try reader.take(32))
        let decided = try reader.integer()
        guard decided < 1 << 63 else { throw DeviceTrustError(.invalidText, "the decision's time is out of range") }
        var head: LogHead?
        if v2 {
            let epoch = try reader.take(4).reduce(0) { $0 << 8 | UInt32($1) }
            let seq = try reader.integer()
            let hash = Array(try reader.take(32))
            guard epoch >= 1, seq < 10_000 else {
                throw DeviceTrustError(.invalidText, "the decision's trust-log head is out of range")
            }
            head = LogHead(epoch: epoch, seq: seq, hash: hash)
        }
        try reader.end()
        return ApprovalDecision(
            userID: ids[0], sessionID: ids[1], requestID: ids[2], deviceID: ids[3], verdict: verdict, bodyHash: hash,
            read: read, decidedAt: decided, logHead: head)
    }

    /// Signs the decision with the answering device's signing key.
    public func signed(by signingKey: Ed25519PrivateKey) -> SignedStatement {
        SignedStatement(signing: body(), with: signingKey)
    }

    /// Verifies a stored decision under the answering device's (certified) signing key.
    ///
    /// - Returns: The decision, parsed from the bytes the signature covers.
    /// - Throws: ``DeviceTrustError``.
    public static func verify(
        _ statement: SignedStatement, signingKey: Ed25519PublicKey
    ) throws(DeviceTrustError)
        -> ApprovalDecision
    {
        try parse(statement.verifiedBody(identityKey: signingKey))
    }

    /// The request as the asking desktop stored it when it created it: what a decision must match
    /// (approvals.md, "What the asking desktop accepts"). Never the server's copy.
    public struct Expectation: Sendable, Hashable {
        public var userID: UUID
        public var sessionID: UUID
        public var requestID: UUID
        public var requesterDeviceID: UUID
        /// Unix seconds.
        public var expiresAt: UInt64
        /// The decoded request body the desktop sealed.
        public var body: [UInt8]
        /// The desktop's own `read` for the request.
        public var read: [UInt8]

        /// Creates an expectation.
        public init(
            userID: UUID, sessionID: UUID, requestID: UUID, requesterDeviceID: UUID, expiresAt: UInt64, body: [UInt8],
            read: [UInt8]
        ) {
            self.userID = userID
            self.sessionID = sessionID
            self.requestID = requestID
            self.requesterDeviceID = requesterDeviceID
            self.expiresAt = expiresAt
            self.body = body
            self.read = read
        }
    }

    /// Verifies a stored decision by `deviceID`'s certified signing key and checks it answers
    /// exactly the request `expected`: the checks of approvals.md that need no trust records (the
    /// caller has already found the device's certificate and no revocation).
    ///
    /// - Returns: The decision.
    /// - Throws: ``DeviceTrustError``: a statement code when the decision does not verify, else
    ///   `.otherRequest`, `.otherBody`, `.noProofOfSecret`, `.ownRequest` or `.outsideWindow`.
    public static func accept(
        _ statement: SignedStatement, deviceID: UUID, signingKey: Ed25519PublicKey, expecting expected: Expectation
    ) throws(DeviceTrustError) -> ApprovalDecision {
        let decision: ApprovalDecision
        do {
            decision = try verify(statement, signingKey: signingKey)
        } catch {
            throw DeviceTrustError(
                error.code, "the decision does not verify under the device's certified key (\(error.code))")
        }
        guard decision.deviceID == deviceID else {
            throw DeviceTrustError(
                .wrongDevice, "the decision does not verify under the device's certified key (wrongDevice)")
        }
        guard decision.userID == expected.userID, decision.sessionID == expected.sessionID,
            decision.requestID == expected.requestID
        else { throw DeviceTrustError(.otherRequest, "the decision is for another user, session or request") }
        guard decision.bodyHash == SHA256.hash(expected.body) else {
            throw DeviceTrustError(
                .otherBody, "the decision answers another request body than the one this device sent")
        }
        guard decision.read == expected.read else {
            throw DeviceTrustError(
                .noProofOfSecret,
                "the decision does not prove its device derived this request's key (it never held the secret)")
        }
        guard decision.deviceID != expected.requesterDeviceID else {
            throw DeviceTrustError(.ownRequest, "the requesting device cannot answer its own request")
        }
        // expires_at - 630 <= decided_at <= expires_at + 30, computed without overflow.
        let earliest = expected.expiresAt >= 630 ? expected.expiresAt - 630 : 0
        let (latest, overflow) = expected.expiresAt.addingReportingOverflow(30)
        guard decision.decidedAt >= earliest, overflow || decision.decidedAt <= latest else {
            throw DeviceTrustError(.outsideWindow, "the decision's time is outside the request's window")
        }
        return decision
    }
}
