import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization

/// Errors that stop a sync (or a coordination call) before it starts; anything later in a sync
/// is recorded in the report.
public struct SyncError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The store has no user yet: log in first.
        case notLoggedIn
        /// The store belongs to another user than the remote is signed in as.
        case userMismatch
        /// A push was asked of a phone, or a pull of a desktop.
        case wrongRole
        /// A session this device does not have (or, for a status report, does not run).
        case unknownSession
        /// The remote publishes another identity key than the one this device pinned (or none):
        /// every command that needs trust stops until the user re-pairs (trust.md).
        case identityChanged
        /// The remote has no device-trust tables: verified trust needs the migration.
        case trustUnavailable
        /// `trust init` when the user already has an identity key (join instead).
        case identityExists
        /// Verified trust was asked for, but this device has pinned no identity (init or join first).
        case noIdentity
        /// An operation only the trust root (the device holding `identity.key`) can do.
        case notTrustRoot
        /// A pairing code or request was refused (malformed code, fingerprint mismatch, expired invite).
        case pairingRefused
        /// A device id that is not one of the user's devices.
        case unknownDevice
        /// Recovery was asked for, but the user has no identity backup (recovery.md), or the
        /// remote has no table for it.
        case noRecoveryBackup
        /// The trust log does not verify at a position (trust-log.md): fail closed.
        case trustLogInvalid
        /// The trust log differs from what this device (or a witness, or an approval) saw at a
        /// position: somebody is shown another history.
        case trustLogForked
        /// The trust log ends before what this device (or a witness, or a revocation it
        /// remembers) knows it holds.
        case trustLogTruncated
        /// No trust root has vouched for this desktop's view of the log for longer than the
        /// bound (trust-log.md, "A frozen view"): the operator may be hiding newer entries.
        case trustLogStale
        /// The user has no trust log yet: a device in legacy mode cannot pair.
        case trustLogMissing
        /// The user has a trust log and this device has pinned nothing (it was never paired): it
        /// seals and accepts no secret until it joins (`trust join`, a code from a trust root).
        case notPaired
        /// The account's identity was reset: this device must be paired again.
        case identityReset
        /// The recovery key was replaced (a newer one is bound to the log).
        case recoveryKeyRetired
        /// A new recovery key the log binds was never shown: show it before binding another.
        case recoveryKeyNotShown
        /// The server wants a recent sign-in for this (sign in again, then retry).
        case freshSignInRequired
        /// A reset, a veto or an append was refused by the log's state (a reset pending or asked
        /// for in the last 24 hours, an epoch closed, the log nearly full).
        case trustLogRefused
        /// A call with a deadline ran out of time (an answer from a notification): nothing more
        /// was sent after it passed.
        case deadlineExceeded
        /// A request or question this device does not believe: not sealed under the newest
        /// generation of the session's secret it holds, or not asked by the session's desktop
        /// (the device that sealed that secret to it, certified and not revoked): nothing of it
        /// is shown.
        case untrustedAsker
    }

    public let code: Code
    public let message: String
    public var description: String { message }
}

/// How a sync runs.
public struct SyncOptions: Sendable {
    /// Which devices receive envelopes.
    public var recipients = RecipientOptions()
    /// Concurrent sealing or opening tasks (all cores by default).
    public var cryptoConcurrency = ProcessInfo.processInfo.activeProcessorCount
    /// Envelopes sealed per chunk before they are sent.
    public var sealChunk = 4_000
    /// Repositories or sessions read from the store and sent per page.
    public var rowPage = 2_000
    /// About how many envelope rows each bucket of the digest covers (docs/sync.md): fewer
    /// make a difference cheaper to list and the digest larger.
    public var rowsPerDigestBucket = 256
    /// Envelope and session uploads in flight at once. Four kept both cores of the benchmark
    /// machine busy while a chunk seals (two left the sealer waiting on uploads, six slowed the
    /// sealing; docs/benchmarks.md).
    public var uploadConcurrency = 4
    /// The fewest rows one upload stream is given (a PostgREST batch's worth), so that a small
    /// push is not cut into many small requests.
    public var uploadPartRows = 500
    /// The envelope versions this device reads, advertised in its `capabilities`; a desktop
    /// writes version 2 to recipients that list it only when this includes 2.
    public var envelopeVersions: [Int] = [1, 2]
    /// Pull: refuse version-1 envelopes (which carry no sender) instead of keeping them marked
    /// unauthenticated.
    public var requireAuthenticated = false
    /// Pull: how far above the highest generation this device has seen for a session (1 before
    /// any) an envelope's generation may be. A generation further up is refused: an envelope
    /// of generation 2^32 - 1 would otherwise lock the session's genuine secrets out for good.
    public var generationWindow: UInt32 = 64
    /// Pull: ask the owning desktop for the secret of each session that arrived without an
    /// envelope for this device (one open `session_secret_requests` row per session).
    public var requestMissingSecrets = true
    /// How long to wait for another sync of the same store.
    public var leaseTimeout: Duration = .seconds(30)
    /// Seconds a pull cursor is moved back, so rows committed late by a concurrent writer with
    /// an earlier `updated_at` are still seen (re-reading a few rows is harmless).
    public var cursorOverlap: TimeInterval = 2
    /// Pull: how many changed rows of a table the pull feed may carry (at most 5,000); when more
    /// changed, the table is paged through instead.
    public var pullFeedRowLimit = 500
    /// Pull: envelopes opened (and checked, and stored) per chunk; memory holds three chunks at
    /// most (one read, one being opened, one being stored).
    public var openChunk = 2_000
    /// The clock the trust log's resets and witnesses are judged by (this device's, by default).
    public var now: @Sendable () -> Date = { Date() }
    /// Tests only: the engine deliberately broken. The push records each chunk in the ledger as
    /// soon as it is sealed, before the remote has accepted it, instead of after (sync.md: the
    /// ledger is written only after the remote accepted a batch). The fault-injection test
    /// proves with it that it would catch a ledger running ahead of the remote.
    package var ledgerBeforeAcceptance = false

    /// Creates the default options.
    public init() {}
}

/// Post-login sync: a desktop pushes, a phone pulls (sync.md).
///
/// Push: own device row, then repositories and sessions changed since the last accepted push,
/// remote deletions of what was deleted here, then envelopes for exactly the (session,
/// recipient) pairs that are missing remotely or were sealed to an older key, sealed on all
/// cores; envelopes of devices that no longer qualify are deleted. Pull: own device row, then
/// repositories and sessions changed since the cursor plus an id listing to find deletions,
/// then the envelopes addressed to this device, checked but never stored opened.
///
/// Every step records its failures in the report and the sync goes on ("Continue Anyway"); a
/// second sync of the same store waits for the lease or fails naming the holder.
public struct SyncEngine: Sendable {
    public let local: DeviceStore
    public let remote: any CompleteRemote
    public let options: SyncOptions
    let logger: Logger?

    /// Creates the engine.
    ///
    /// - Parameters:
    ///   - local: This device's store.
    ///   - remote: The remote, signed in as the store's user.
    ///   - options: Policy and tuning.
    ///   - logger: Where to log progress (never secrets); nothing is logged without one.
    public init(
        local: DeviceStore, remote: any CompleteRemote, options: SyncOptions = SyncOptions(), logger: Logger? = nil
    ) {
        self.local = local
        self.remote = remote
        self.options = options
        self.logger = logger
    }

    /// Pushes on a desktop, pulls on a phone.
    public func sync(progress: ProgressHandler? = nil) async throws -> SyncReport {
        let identity = try await local.requireIdentity()
        return identity.role == .desktop ? try await push(progress: progress) : try await pull(progress: progress)
    }

    func prepare(role: SyncRole, purpose: String) async throws -> (DeviceIdentity, UUID, SyncLease) {
        let lease = try await local.acquireSyncLease(purpose: purpose, timeout: options.leaseTimeout)
        do {
            let (identity, user) = try await signedIn(role: role)
            // A device key that cannot be used (too open, missing, another user's) stops the sync
            // before any phase runs, rather than failing the phases that need it one by one.
            _ = try await local.deviceKey()
            return (identity, user, lease)
        } catch {
            lease.release()
            throw error
        }
    }

    /// This device's identity and user, checked against the remote (and the role, when given).
    func signedIn(role: SyncRole?) async throws -> (DeviceIdentity, UUID) {
        let device = try await SignedInDevice.check(local, remoteUser: remote.userID, role: role)
        return (device.identity, device.userID)
    }

    /// The trust in force for a sync: the mode, the verified trust (with a pinned log or legacy
    /// identity), the report's summary, and a verification failure, which fails closed: the
    /// phases that seal or accept envelopes fail with it, the others run.
    struct TrustContext: Sendable {
        var mode: TrustMode
        var snapshot: TrustSnapshot?
        var summary: TrustSummary
        /// A ``SyncError`` of verification, or the ``RemoteStoreError`` of a server that could not be asked.
        var failure: (any Error & Sendable)?
        /// The user has a trust log this device is not in: a pull accepts no envelope.
        var unpaired = false

        /// Throws the failure, in the phases that seal or accept envelopes.
        func requireVerified() throws {
            if let failure { throw failure }
        }
    }

    /// Loads the trust in force before a sync's trust-sensitive phases.
    ///
    /// - Parameter reported: The log's head as a feed reported it (nothing is read or verified
    ///   when it is the pinned head).
    /// - Throws: ``SyncError`` `.identityChanged` (the legacy identity key is not the pinned one),
    ///   `.noIdentity` (mode `verified` asked for without a pinned identity); remote errors.
    func trustContext(phase: SyncPhase, selfID: UUID, reported: TrustLogHead?? = .none) async throws -> TrustContext {
        var snapshot: TrustSnapshot?
        var failure: (any Error & Sendable)?
        do {
            snapshot = try await TrustSnapshot.load(
                local: local, remote: remote, phase: phase, options: options, reported: reported)
        } catch let error as SyncError where Self.failsClosed.contains(error.code) {
            failure = error
            logger?.warning("trust: \(error)")
        } catch let error as RemoteStoreError where Self.unreachable.contains(error.code) {
            // The server could not be asked (down, refusing, signed out): the phases that seal or
            // accept fail with that, closed, and the others run and meet the same server, so a
            // dead server is a report whose phases failed (exit 3), whatever the trust mode.
            failure = error
            logger?.warning("trust: \(error)")
        }
        var note: String?
        var unpaired = false
        if snapshot == nil && failure == nil {
            let found = try await unpinned(reported: reported)
            note = found.note
            // A pull accepts nothing and fails nothing (a verified desktop seals nothing to a
            // device outside the log); a push that would seal fails closed.
            if let refusal = found.refusal {
                if phase == .envelopes && refusal is SyncError { unpaired = true } else { failure = refusal }
            }
        }
        // Joined but not approved yet: the log does not certify this device, so whatever it
        // sealed every phone would refuse (`uncertifiedSender`); its push says so instead.
        if phase == .secrets, failure == nil, let snapshot, snapshot.log != nil, !snapshot.isTrusted(selfID),
            snapshot.revocations[selfID] == nil
        {
            failure = SyncError(
                code: .notPaired,
                message: "this device joined the user's trust log but no trust root has approved it yet, so it "
                    + "seals no secret: run `sync-cli trust approve` on a trust root, then sync here")
        }
        let pinned = snapshot != nil || failure != nil || unpaired
        let mode =
            failure != nil ? TrustMode.verified : RecipientPolicy.mode(options.recipients, hasPinnedIdentity: pinned)
        if mode == .verified && !pinned {
            throw SyncError(
                code: .noIdentity,
                message: "trust mode verified needs the user's identity pinned on this device: "
                    + "run `sync-cli trust init` on the first device or `sync-cli trust join` here")
        }
        var summary = TrustSummary(mode: mode, identityFingerprint: snapshot?.fingerprint.description)
        summary.invalidStatements = snapshot?.problems.filter { $0.code == .invalidStatement }.count ?? 0
        summary.reports = snapshot?.problems ?? []
        summary.head = snapshot?.head?.description
        summary.entriesVerified = snapshot?.verifiedEntries ?? 0
        summary.entriesRead = snapshot?.readEntries ?? 0
        if let snapshot, snapshot.revocations[selfID] != nil {
            summary.note =
                "this device was revoked: it receives no secrets (pair it again from a new store)"
        }
        if let failure {
            summary.note = (failure as? SyncError)?.message ?? "the trust log could not be read: \(failure)"
        }
        if let note { summary.note = note }
        return TrustContext(mode: mode, snapshot: snapshot, summary: summary, failure: failure, unpaired: unpaired)
    }

    /// Before this device pinned anything: once the user has a trust log, a device that is not
    /// in it seals and accepts nothing (`notPaired`, failing closed like a log that does not
    /// verify), whatever trust mode was asked for: a login alone must not choose who receives
    /// secrets. Once seen, the user's log is remembered: a server that later hides it changes
    /// nothing. A remote without the trust log is said once per store: every active device of
    /// the user then receives secrets (trust mode `any`). A server that cannot be asked fails the
    /// phases that seal or accept.
    func unpinned(reported: TrustLogHead??) async throws -> (note: String?, refusal: (any Error & Sendable)?) {
        let refusal = SyncError(
            code: .notPaired,
            message: "this user has a trust log and this device is not in it, so it seals and accepts no secret: "
                + "pair it with `sync-cli trust join` here (a code from `sync-cli trust invite` on a trust root)")
        // The pull feed says whether the user has a log: asked only without one, or once per store
        // when it reports none (to tell a remote without the trust log from a user without a log).
        let seen = try await local.setting(.trustLogSeen)
        switch reported {
        case _ where seen == .userHasLog: return (refusal.message, refusal)
        case .some(.some):
            try await local.setSetting(.trustLogSeen, .userHasLog)
            return (refusal.message, refusal)
        case .some(.none) where seen != nil: return (nil, nil)
        default: break
        }
        let geneses: [TrustLogRow]
        do {
            geneses = try await remote.trustLogGeneses()
        } catch let error as RemoteStoreError where error.code == .missingTable || error.code == .missingFunction {
            guard seen == nil else { return (nil, nil) }
            try await local.setSetting(.trustLogSeen, .missing)
            let note =
                "verified trust needs the trust-log migration (supabase/migrations/20261122002500_trust_log.sql); "
                + "this remote has none, so every active device of the user receives secrets (trust mode any)"
            logger?.notice("\(note)")
            return (note, nil)
        } catch let error as RemoteStoreError {
            logger?.warning("trust: \(error)")
            return (nil, error)
        }
        guard !geneses.isEmpty else {
            if seen != .present { try await local.setSetting(.trustLogSeen, .present) }
            return (nil, nil)
        }
        try await local.setSetting(.trustLogSeen, .userHasLog)
        logger?.warning("trust: \(refusal)")
        return (refusal.message, refusal)
    }

    /// The verification failures that fail closed while a sync's other phases run.
    /// Remote failures that say the server could not be asked, not that it answered wrongly.
    static let unreachable: [RemoteStoreError.Code] = [.network, .http, .unauthorized]

    static let failsClosed: Set<SyncError.Code> = [
        .trustLogInvalid, .trustLogForked, .trustLogTruncated, .trustLogStale, .identityReset,
    ]

    /// The own device row; it carries the envelope versions this device reads until they were
    /// advertised once (after that the upsert leaves `capabilities` alone).
    func ownDeviceRow(_ identity: DeviceIdentity, user: UUID) async throws -> OwnDeviceRow {
        var row = OwnDeviceRow(
            id: identity.id, userID: user, name: identity.name, deviceType: identity.deviceType,
            hostname: identity.hostname, publicKey: identity.publicKey.base64)
        if let token = try await local.setting(.apnsToken), let environment = try await local.setting(.apnsEnvironment)
        {
            row.apns = APNsRegistration(
                token: token, environment: environment, pushEnabled: try await local.setting(.apnsPushEnabled) ?? false)
        }
        let versions = options.envelopeVersions.sorted()
        if try await local.setting(.advertisedVersions) != versions.map(String.init).joined(separator: ",") {
            row.envelopeVersions = versions
        }
        return row
    }

    /// Upserts the own device row and remembers what it advertised.
    ///
    /// A device the user revoked says so in its row (`is_active = false`) instead of marking
    /// itself active again at every sync.
    func upsertOwnDevice(_ identity: DeviceIdentity, user: UUID, revoked: Bool = false) async throws {
        var row = try await ownDeviceRow(identity, user: user)
        row.isActive = !revoked
        try await remote.upsertOwnDevice(row)
        if let versions = row.envelopeVersions {
            try await local.setSetting(.advertisedVersions, versions.map(String.init).joined(separator: ","))
        }
    }

    static func issues(_ rejected: [RejectedRow], phase: SyncPhase) -> [SyncIssue] {
        rejected.map {
            SyncIssue(
                phase: phase, code: SyncIssue.Code(remote: $0.error.code), rowID: $0.key, message: $0.error.description)
        }
    }

    /// Runs `body` over ``SyncOptions/cryptoConcurrency`` slices of `items` at once (or
    /// `workers`, and no slice smaller than `minimumSlice` items), in a bounded task group;
    /// returns the slices' results in no particular order.
    func inParallel<Item: Sendable, Result: Sendable>(
        _ items: [Item], workers: Int? = nil, minimumSlice: Int = 1,
        _ body: @escaping @Sendable ([Item]) async throws -> Result
    ) async throws -> [Result] {
        guard !items.isEmpty else { return [] }
        let fit = (items.count + max(1, minimumSlice) - 1) / max(1, minimumSlice)
        let workers = max(1, min(workers ?? options.cryptoConcurrency, items.count, fit))
        let slice = (items.count + workers - 1) / workers
        return try await withThrowingTaskGroup(of: Result.self) { group in
            for start in stride(from: 0, to: items.count, by: slice) {
                let part = Array(items[start..<min(start + slice, items.count)])
                group.addTask { try await body(part) }
            }
            var results: [Result] = []
            for try await result in group { results.append(result) }
            return results
        }
    }
}

/// A thread-safe running total for progress from batch handlers.
final class Counter: Sendable {
    private let value = Mutex(0)
    func add(_ amount: Int) -> Int {
        value.withLock {
            $0 += amount
            return $0
        }
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}

/// Whether the remote had the trust log when a sync last asked, and whether the user had one.
enum TrustLogSeen: String, StoreSettingValue {
    case present, missing
    /// The user has a log (seen once: a log is never removed, so a server that later reports
    /// none is not believed by a device without a pin).
    case userHasLog
}

extension StoreSetting where Value == TrustLogSeen {
    /// Whether the remote had the trust log when asked (said once per store).
    static var trustLogSeen: Self { StoreSetting("trust.remote_log") }
}

extension StoreSetting where Value == String {
    /// The envelope versions last advertised successfully in this device's row.
    static var advertisedVersions: Self { StoreSetting("capabilities.envelope_versions") }
    /// Where the next pull asks the pull feed from (its last answer's time, minus the overlap).
    static var pullFeedSince: Self { StoreSetting("pull.feed.since") }
}

extension StoreSetting where Value == Int64 {
    /// The change sequence a phase's last accepted push went through (0 before any).
    static func pushMark(_ phase: SyncPhase) -> Self { StoreSetting("push.\(phase.rawValue).through") }
}
