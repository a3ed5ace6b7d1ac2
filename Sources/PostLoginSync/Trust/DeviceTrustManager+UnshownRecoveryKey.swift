import DeviceTrust
import Foundation
import LocalStore
import SecretCrypto
import SyncModel

// A new recovery key until the person has it (trust-log.md, "A lost answer"): kept 0600 in
// `recovery.unshown.key` before the append that binds it, and until it has been shown. The log
// decides what a kept key is: bound (the log's recovery key is its) it is warned about, by
// `trust status` and every root's sync, until shown; refused, it is forgotten.

extension DeviceTrustManager {
    /// Runs `body`, the call that binds `recovery` to the log, with the key kept first.
    ///
    /// The key stays kept after `body` returns, until ``recoveryKeyShown()``. When `body`
    /// throws, the log is read again: a key it does not bind is forgotten; one it binds (the
    /// append took, its answer lost) or a log that cannot be read keeps it, for ``unshownRecoveryKey()``.
    func binding<T>(_ recovery: RecoveryKey?, _ body: () async throws -> T) async throws -> T {
        guard let recovery else { return try await body() }
        try local.stageRecoveryKey(recovery.bytes)
        do {
            return try await body()
        } catch {
            if let state = try? await verifiedLog(), !Self.binds(state, recovery) {
                local.removeUnshownRecoveryKey()
            }
            throw error
        }
    }

    /// The new recovery key the log binds and the person has not been shown (a lost answer, a
    /// process ended before it printed), or `nil`. A kept key the log does not bind is forgotten.
    ///
    /// Show it, then call ``recoveryKeyShown()``.
    ///
    /// - Throws: ``SyncError`` when the log cannot be verified (the key stays kept).
    public func unshownRecoveryKey() async throws -> RecoveryKey? {
        guard let bytes = try local.unshownRecoveryKey() else { return nil }
        let recovery = try RecoveryKey(bytes: bytes)
        let state = try await verifiedLog()
        guard Self.binds(state, recovery) else {
            local.removeUnshownRecoveryKey()
            return nil
        }
        return recovery
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
        state.recoveryPublicKey?.rawRepresentation
            == recovery.agreementKey(userID: state.userID).publicKey.rawRepresentation
    }
}
