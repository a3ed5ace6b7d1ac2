import Foundation
import SyncModel

/// What changed for one device since a cursor: the feed a phone's pull reads in one request
/// (docs/sync.md, "The pull feed"), so that a pull with nothing new costs that request and the
/// device's own row, whatever the size.
///
/// The rows that changed come with it up to a limit; past it, the caller pages through the
/// table. What was deleted and which envelopes changed it says as digests, which the caller
/// compares with its own: equal, there is nothing more to read.
public struct PullChanges: Sendable {
    /// The remote's clock when it answered: where the next call continues (minus an overlap).
    public var cursor: ChangeCursor
    /// The user's repositories changed since the cursor (every one without a cursor), ordered by
    /// `(updated_at, id)`; `nil` when more changed than the call's row limit.
    public var repositories: [Versioned<RepositoryRecord>]?
    /// The user's sessions, as ``repositories``.
    public var sessions: [Versioned<SessionRecord>]?
    /// The envelopes addressed to the device of the sessions in ``sessions``; `nil` with them.
    public var envelopes: [EnvelopeRecord]?
    /// Every repository id of the user.
    public var repositoryIDs: RowSetDigest
    /// Every session id of the user.
    public var sessionIDs: RowSetDigest
    /// Every envelope row addressed to the device, by row hash (`DigestBucket`'s `row_hash`).
    public var envelopeRows: RowSetDigest
    /// The user's device rows changed since the cursor (every one without a cursor).
    public var devices: [RemoteDevice]
    /// A fingerprint of the legacy identity key and every legacy certificate and revocation row:
    /// when it changes, a device in legacy mode reloads trust. `nil` without those tables.
    public var statements: String?
    /// The head of the trust log's current epoch: while it equals a device's pin, nothing in the
    /// log changed. `nil` before any log (or from a remote without one).
    public var trustLog: TrustLogHead?
    /// The device's open secret requests.
    public var secretRequests: [SecretRequestRow]
    /// Approval requests changed since the cursor (every pending one without a cursor).
    public var approvals: [ApprovalRequestRow]

    /// Creates a set of changes.
    public init(
        cursor: ChangeCursor, repositories: [Versioned<RepositoryRecord>]?, sessions: [Versioned<SessionRecord>]?,
        envelopes: [EnvelopeRecord]?, repositoryIDs: RowSetDigest, sessionIDs: RowSetDigest,
        envelopeRows: RowSetDigest, devices: [RemoteDevice] = [], statements: String? = nil,
        trustLog: TrustLogHead? = nil, secretRequests: [SecretRequestRow] = [], approvals: [ApprovalRequestRow] = []
    ) {
        self.trustLog = trustLog
        self.cursor = cursor
        self.repositories = repositories
        self.sessions = sessions
        self.envelopes = envelopes
        self.repositoryIDs = repositoryIDs
        self.sessionIDs = sessionIDs
        self.envelopeRows = envelopeRows
        self.devices = devices
        self.statements = statements
        self.secretRequests = secretRequests
        self.approvals = approvals
    }
}

/// A remote with the pull feed (docs/sync.md, "The pull feed"). A remote without it does not
/// conform, or (a deployment without the migration) answers `.missingFunction`; the pull then
/// pages through every table as before.
public protocol PullFeedRemote: SyncRemote {
    /// What changed for `deviceID` (one of the user's devices) since `cursor`; without a cursor,
    /// everything. Rows come with the answer while at most `rowLimit` of a table changed.
    ///
    /// - Throws: `RemoteStoreError` `.missingFunction` when the remote has no feed;
    ///   `.permissionDenied` for a device that is not the user's.
    func pullChanges(for deviceID: UUID, since cursor: ChangeCursor?, rowLimit: Int) async throws -> PullChanges

    /// The digest of the envelope rows addressed to `deviceID`, by bucket of session
    /// (`DigestBucket`); `buckets` a power of two up to 65,536.
    ///
    /// - Throws: `RemoteStoreError` `.missingFunction`, `.invalidValue` for a bad bucket count,
    ///   `.permissionDenied` for a device that is not the user's.
    func recipientDigest(deviceID: UUID, buckets: Int) async throws -> [DigestBucket]
}
