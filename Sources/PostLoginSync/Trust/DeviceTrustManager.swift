import DeviceTrust
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel

/// Device trust as library calls a desktop or phone app can make from its own UI: starting the
/// user's trust log, pairing by code, revoking, granting roots, recovering, resetting, status
/// (trust.md and recovery.md). `sync-cli trust` is a thin layer over them.
///
/// Trust lives in the user's trust log: an append-only, hash-chained history that only a holder
/// of the identity key in force (a **root**) can extend, and that every device verifies in full
/// and pins. Every call that writes the log first brings it up to date and verifies it; nothing
/// is written when it does not verify.
public struct DeviceTrustManager: Sendable {
    public let local: DeviceStore
    public let remote: any CompleteRemote
    /// The options this device syncs with (its own row is upserted with them; the clock is theirs).
    public let options: SyncOptions
    let logger: Logger?

    /// How long an invite is valid.
    public static let inviteLifetime: TimeInterval = 600
    /// Entries per append call (the server takes 1 to 8).
    static let batch = 8

    /// Creates the manager for this device's store and the signed-in remote.
    public init(
        local: DeviceStore, remote: any CompleteRemote, options: SyncOptions = SyncOptions(), logger: Logger? = nil
    ) {
        self.local = local
        self.remote = remote
        self.options = options
        self.logger = logger
    }

    var engine: SyncEngine { SyncEngine(local: local, remote: remote, options: options, logger: logger) }
    var seconds: UInt64 { UInt64(max(0, options.now().timeIntervalSince1970)) }

    func signedIn() async throws -> (DeviceIdentity, UUID) {
        try await engine.signedIn(role: nil)
    }

    /// The verified trust, brought up to date (fail closed), or `nil` before any pairing.
    func verified() async throws -> TrustSnapshot? {
        try await TrustSnapshot.load(local: local, remote: remote, options: options)
    }

    /// The verified log; `.noIdentity` without one, `.trustLogMissing` in legacy mode.
    func verifiedLog() async throws -> TrustLogState {
        guard let snapshot = try await verified() else {
            throw SyncError(
                code: .noIdentity,
                message: "this device has no trust log pinned: run `sync-cli trust init` on the first device, "
                    + "or `sync-cli trust join` here")
        }
        guard let log = snapshot.log else {
            throw SyncError(
                code: .trustLogMissing,
                message: "this user has no trust log yet: a trust root migrates at its next sync after a fresh sign-in "
                    + "(`sync-cli login`, then `sync-cli sync`)")
        }
        return log
    }

    /// The identity key in force, when this device is a root holding it (after settling its key
    /// files: a leftover `identity.next.key`, a grant to open).
    ///
    /// - Throws: ``SyncError`` `.notTrustRoot` otherwise.
    func rootKey(_ state: TrustLogState) async throws -> Ed25519PrivateKey {
        let identity = try await local.requireIdentity()
        if let key = try await TrustLogRoot(local: local, logger: logger).settleKeys(state, selfID: identity.id) {
            return key
        }
        throw SyncError(
            code: .notTrustRoot,
            message: "this device is not a trust root (the log does not list it as one, or it lacks the identity key "
                + "in force); run this on a root (`sync-cli trust status` lists them)")
    }

    /// Appends what `make` writes after the verified head, in calls of up to 8 entries; a
    /// refusal because another root appended first (40001) reads the log again and rebuilds once.
    ///
    /// - Returns: The state after the appended entries.
    @discardableResult
    func append(
        _ make: (inout TrustLogWriter, UInt64) throws -> Void
    ) async throws -> TrustLogState {
        for attempt in 0..<2 {
            let state = try await verifiedLog()
            let key = try await rootKey(state)
            let identity = try await local.requireIdentity()
            var writer = try TrustLogWriter(state: state, identity: key, author: identity.id)
            try make(&writer, seconds)
            do {
                return try await send(writer, from: state)
            } catch let error as RemoteStoreError where error.postgrestCode == .serializationFailure && attempt == 0 {
                logger?.notice("trust log: another root appended first; reading the log again")
            }
        }
        throw SyncError(code: .trustLogRefused, message: "the trust log moved twice while appending: try again")
    }

    /// Sends a writer's entries in calls of up to 8, saving the pin after each accepted call.
    func send(_ writer: TrustLogWriter, from state: TrustLogState) async throws -> TrustLogState {
        var replay = state
        for start in stride(from: 0, to: writer.written.count, by: Self.batch) {
            let chunk = Array(writer.written[start..<min(start + Self.batch, writer.written.count)])
            do {
                try await remote.appendTrustEntries(
                    epoch: state.epoch, firstSeq: chunk[0].seq,
                    chunk.map { TrustLogAppend(entry: $0.text, backup: $0.backup) })
            } catch let error as RemoteStoreError {
                throw Self.refusal(error)
            }
            let (next, _) = try TrustLogVerifier.extend(replay, with: chunk.map(\.text))
            replay = next
            var sync = TrustLogSync(local: local, remote: remote, phase: .secrets, now: options.now())
            try await sync.save(
                replay, new: chunk.map { PinnedLogEntry(seq: $0.seq, text: $0.text, hash: $0.hash) },
                highestEpoch: (try await local.trustLogPin())?.highestEpoch ?? replay.epoch)
            try await sync.witness(replay)
        }
        return replay
    }

    /// A remote refusal of a trust-log call, in the engine's words.
    static func refusal(_ error: RemoteStoreError) -> Error {
        switch error.postgrestCode {
        case .invalidAuthorization?:
            return SyncError(
                code: .freshSignInRequired,
                message:
                    "the server wants a sign-in with your password in the last 10 minutes for this (a magic link "
                    + "or an emailed code does not count): sign in again (`sync-cli login`), then retry")
        case .uniqueViolation?:
            return SyncError(
                code: .identityExists,
                message: "this user already has a trust log: pair this device with `sync-cli trust join` "
                    + "(a code from a trust root)")
        case .objectNotInPrerequisiteState?:
            // Which state refused (a reset pending, the seq 9,000 reserve, a day's limit) is only
            // in the server's words: the trust-log functions' own texts, which quote no value, are
            // kept for the person who must act on them.
            return SyncError(
                code: .trustLogRefused, message: "the trust log refused this: \(error.serverMessage ?? error.message)")
        default: return error
        }
    }

    /// `count` bytes from hex (either case) or standard, URL-safe or unpadded base64; `nil` otherwise.
    static func bytes(_ text: String, count: Int) -> [UInt8]? {
        if text.count == count * 2, let bytes = try? ByteEncoding.bytes(hex: text) { return bytes }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let bytes = try? ByteEncoding.bytes(base64: base64), bytes.count == count else { return nil }
        return bytes
    }
}
