import DeviceTrust
import Foundation
import LocalStore
import SecretCrypto
import SyncModel

// A new recovery key until the person has it (trust-log.md, "A lost answer"): kept 0600 in
// `recovery.unshown.key` before the append that binds it, and until it has been shown. The log
// decides what a kept key is: bound (the log's recovery key is its) it is warned about, by
// `trust status` and every root's sync, until shown; not bound, it opens nothing and waits to be
// replaced by the next key a command binds.

extension DeviceTrustManager {
    /// Runs `body`, the call that binds `recovery` to the log, with the key kept first.
    ///
    /// The key stays kept after `body` returns, and when it throws (an error does not prove the
    /// append did not land: a timed-out call may still commit), until ``recoveryKeyShown()`` or
    /// the next call that binds a key. A kept key the log binds and nobody was shown is never
    /// replaced: the call is refused until ``unshownRecoveryKey()`` has shown it.
    ///
    /// - Throws: ``SyncError`` `.recoveryKeyNotShown` when a kept key is bound, or the log cannot
    ///   be read to tell; whatever `body` throws.
    @discardableResult
    func binding<T>(_ recovery: RecoveryKey?, _ body: () async throws -> T) async throws -> T {
        guard let recovery else { return try await body() }
        if let bytes = try local.unshownRecoveryKey() {
            let kept = try RecoveryKey(bytes: bytes)
            guard let state = try? await verifiedLog(), !Self.binds(state, kept) else {
                throw SyncError(
                    code: .recoveryKeyNotShown,
                    message: "a recovery key bound earlier was never shown (or the log cannot be read to tell): run "
                        + "`sync-cli trust recovery-key show` first; nothing was changed")
            }
        }
        try local.stageRecoveryKey(recovery.bytes)
        return try await body()
    }

    /// The new recovery key the log binds and the person has not been shown (a lost answer, a
    /// process ended before it printed), or `nil` (none kept, or the kept one is not bound: it
    /// stays, as its command may be between keeping it and its append).
    ///
    /// Show it, then call ``recoveryKeyShown()``.
    ///
    /// - Throws: ``SyncError`` when the log cannot be verified (the key stays kept).
    public func unshownRecoveryKey() async throws -> RecoveryKey? {
        guard let bytes = try local.unshownRecoveryKey() else { return nil }
        let recovery = try RecoveryKey(bytes: bytes)
        let state = try await verifiedLog()
        return Self.binds(state, recovery) ? recovery : nil
    }

    /// Forgets the kept recovery key: the person has it.
    public func recoveryKeyShown() {
        local.removeUnshownRecoveryKey()
    }

    /// The warning a sync and `trust status` give while the log binds a kept key; `nil` when
    /// there is nothing to say. A kept key the log does not bind is left alone: its command may
    /// be between writing it and its append (a sync takes no lock a trust command waits for),
    /// and a key never bound opens nothing.
    func unshownRecoveryKeyIssue(_ state: TrustLogState) -> SyncIssue? {
        guard let bytes = try? local.unshownRecoveryKey(), let recovery = try? RecoveryKey(bytes: bytes),
            Self.binds(state, recovery)
        else { return nil }
        return SyncIssue(
            phase: .secrets, code: .recoveryKeyNotShown,
            message: "a new recovery key is bound to the trust log and was never shown (its command's answer was "
                + "lost, or it ended before printing): run `sync-cli trust recovery-key show` and write it down")
    }

    static func binds(_ state: TrustLogState, _ recovery: RecoveryKey) -> Bool {
        state.recoveryKey == recovery.agreementKey(userID: state.userID).publicKey
    }
}
