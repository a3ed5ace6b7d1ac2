import DeviceTrust
import Foundation
import GRDB
import RemoteContract
import RemoteRules
import SecretCrypto
import SyncModel

/// Device credentials on the embedded remote, with the rules of `*_device_credentials.sql`
/// (docs/trust.md, "Device credentials"): the store acts for the device whose credential it was
/// given (``EmbeddedRemoteStore/init(path:userID:signedInAt:busyTimeout:deepLinkScheme:credential:)``),
/// registered once; never for a device id a call names.
extension EmbeddedRemoteStore {
    /// SHA-256 of a credential, what the remote keeps.
    static func hash(of credential: DeviceCredential) -> Data {
        credential.withBytes { Data(SHA256.hash($0)) }
    }

    // MARK: - Registration

    /// Registers this store's credential for its device, once (`register_device`); a failed
    /// registration is made again by the next call. Without a credential, nothing.
    func ensureRegistered() async throws {
        guard let credential, let hash = credentialHash else { return }
        guard !registered.withLock({ $0 }) else { return }
        do {
            // Registered already (every run after the first): a read, no write transaction.
            let known = try await pool.read { db in
                try String.fetchOne(
                    db,
                    sql: "SELECT device_id FROM device_credentials WHERE hash = ? AND user_id = ? AND ended_at IS NULL",
                    arguments: [hash, me]) == credential.deviceID.canonical
            }
            if !known {
                try await pool.write { db in
                    try Self.register(db, user: me, device: credential.deviceID.canonical, hash: hash)
                }
            }
        } catch {
            throw Self.wrap(error, "registering this device's credential")
        }
        registered.withLock { $0 = true }
    }

    /// A 42501 said in the words of the registration's refusal when this store's credential is
    /// what stopped it (revoked since it registered, or its slot taken).
    func explainRefusal(_ error: Error) async -> Error {
        guard (error as? RemoteStoreError)?.code == .permissionDenied, let credential, let hash = credentialHash
        else { return error }
        do {
            try await pool.read { db in
                try Self.register(db, user: me, device: credential.deviceID.canonical, hash: hash)
            }
        } catch let refusal as RemoteStoreError
            where refusal.isDeviceRevoked || refusal.hint == "device-credential-taken"
        {
            return refusal
        } catch {}
        return error
    }

    /// Registers `device`'s credential `hash` for `user` as ``CredentialRules`` says: nothing
    /// when it is registered already, else a new row while the hour has room.
    static func register(_ db: Database, user: String, device: String, hash: Data) throws {
        let row = try Row.fetchOne(
            db, sql: "SELECT user_id, hash, ended_at FROM device_credentials WHERE device_id = ?", arguments: [device])
        let registered = row.map {
            CredentialRules.Registered(
                mine: $0["user_id"] as String? == user, ended: $0["ended_at"] as String? != nil,
                sameCredential: $0["hash"] as Data? == hash)
        }
        // With a row the rule reads nothing else: the rest is read only without one.
        let unregistered = registered == nil
        let answer = try CredentialRules.registration(
            registered: registered,
            deviceOfAnother: unregistered && Self.owner(db, table: "devices", id: device).map { $0 != user } ?? false,
            revokedInLog: unregistered && TrustedDevices.revokedInAnyEpoch(db, user: user).contains(device),
            credentialInUse: unregistered
                && Bool.fetchOne(db, sql: "SELECT 1 FROM device_credentials WHERE hash = ?", arguments: [hash]) != nil)
        switch answer {
        case .known: return
        case .refused(let refusal): throw Self.refusal(refusal)
        case .register:
            let recent = try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM device_credentials WHERE user_id = ? AND ended_at IS NULL AND registered_at > ?
                    """, arguments: [user, Timestamp.format(Date(timeIntervalSinceNow: -3600))])
            guard CredentialRules.roomForNewDevice(registeredInLastHour: recent ?? 0) else {
                throw Self.refusal(CredentialRules.Refusal.limit)
            }
            try db.execute(
                sql: "INSERT INTO device_credentials (device_id, user_id, hash, registered_at) VALUES (?, ?, ?, ?)",
                arguments: [device, user, hash, now])
        }
    }

    /// A rule's refusal as the PostgreSQL remote raises it.
    static func refusal(_ refusal: some RuleRefusal) -> RemoteStoreError {
        raised(refusal.sqlState, refusal.message, hint: refusal.hint)
    }

    /// Raises a rule's refusal (``refusal(_:)``) when the rule made one.
    static func refuse(_ refusal: (some RuleRefusal)?) throws {
        if let refusal { throw Self.refusal(refusal) }
    }

    /// What PostgreSQL raises with `sqlState` (`nil`: none), as the PostgREST client reads it.
    static func raised(_ sqlState: String?, _ message: String, hint: String? = nil) -> RemoteStoreError {
        let codes: [String: RemoteStoreError.Code] = [
            "42501": .permissionDenied, "22023": .invalidValue, "23505": .conflict, "54000": .limitExceeded,
        ]
        return RemoteStoreError(
            sqlState.flatMap { codes[$0] } ?? .http, message,
            postgrestCode: sqlState.map { PostgRESTErrorCode(rawValue: $0) }, hint: hint)
    }

    // MARK: - The calling device

    /// What the service role's reads pass their gates with: no device's id, so every call that
    /// acts for a device refuses it.
    static let serviceRoleCaller = "service_role"

    /// The user's registered device whose credential this store holds, unless revoked
    /// (``CallerRules/credentialDevice(_:caller:)``).
    func credentialDevice(_ db: Database) throws -> String? {
        if isServiceRole { return Self.serviceRoleCaller }
        guard let hash = credentialHash else { return nil }
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT device_id, user_id, ended_at FROM device_credentials WHERE hash = ?"),
            arguments: [hash])
        let credential = row.map {
            CallerRules.Credential(
                device: $0["device_id"], user: $0["user_id"], ended: $0["ended_at"] as String? != nil)
        }
        return CallerRules.credentialDevice(credential, caller: me)
    }

    /// The calling device: ``credentialDevice(_:)``, certified by the log in force when the user
    /// has a log (``CallerRules/callingDevice(credentialDevice:certified:)``).
    func callingDevice(_ db: Database) throws -> String? {
        guard let device = try credentialDevice(db) else { return nil }
        if isServiceRole { return device }
        return try CallerRules.callingDevice(credentialDevice: device, certified: certified(db, device))
    }

    /// Whether the trust log in force certifies `device` (`nil`: the user has no log).
    func certified(_ db: Database, _ device: String) throws -> Bool? {
        try Self.vouchedDevices(db, user: me).map { $0.contains(device) }
    }

    static func hasTrustLog(_ db: Database, user: String) throws -> Bool {
        (try TrustLogServerState.fetch(db, user: user)?.highestEpoch ?? 0) > 0
    }

    /// The devices the trust log in force vouches for, or nil before the user has a log (when
    /// any of the user's devices is): who clearings and live activities go to.
    static func vouchedDevices(_ db: Database, user: String) throws -> Set<String>? {
        try hasTrustLog(db, user: user) ? TrustedDevices.of(db, user: user) : nil
    }

    /// The device a call acts for: `named`, which must be the calling device (`trusted`:
    /// certified too, when the user has a log), as ``CallerRules/acting(named:trusted:caller:credentialDevice:certified:)``
    /// says. `private.acting_device`. The service role is no signed-in user: it acts for no device.
    func acting(_ db: Database, _ named: UUID?, trusted: Bool) throws -> UUID {
        let signedIn = isServiceRole ? nil : me
        let device = try signedIn == nil ? nil : credentialDevice(db)
        let verdict = try CallerRules.acting(
            named: named?.canonical, trusted: trusted, caller: signedIn, credentialDevice: device,
            certified: { try device.flatMap { try self.certified(db, $0) } })
        switch verdict {
        case .acts(let acting):
            // The device acted for is the name the call gave, a UUID: this never refuses.
            guard let id = UUID(uuidString: acting) else { throw Self.refusal(CallerRules.Refusal.noCredential) }
            return id
        case .refused(let refusal): throw Self.refusal(refusal)
        }
    }

    /// The calling device for a call that names none (`private.caller_device`).
    func caller(_ db: Database, trusted: Bool) throws -> UUID {
        let device = isServiceRole ? nil : try credentialDevice(db).flatMap(UUID.init(uuidString:))
        return try acting(db, device, trusted: trusted)
    }

    /// Refuses unless `device` runs `session` (`private.require_session_desktop`,
    /// ``CallerRules/sessionDesktop(runBy:device:)``).
    func requireSessionDesktop(_ db: Database, session: UUID, device: UUID) throws {
        let runBy = try String.fetchOne(
            db, sql: "SELECT device_id FROM agent_coding_sessions WHERE id = ? AND user_id = ?",
            arguments: [session.canonical, me])
        try Self.refuse(CallerRules.sessionDesktop(runBy: runBy, device: device.canonical))
    }

    /// Refuses unless the calling (certified) device asked `request`, an approval or a question
    /// of the user's that exists (`private.require_asker`): another user's is left to the call,
    /// which refuses it as it refuses an unknown id.
    func requireAsker(_ db: Database, _ request: UUID) throws {
        let device = try caller(db, trusted: true).canonical
        var askers: [String] = []
        for table in ["approval_requests", "agent_questions"] where try db.tableExists(table) {
            askers += try String.fetchAll(
                db, sql: "SELECT requester_device_id FROM \(table) WHERE id = ? AND user_id = ?",
                arguments: [request.canonical, me])
        }
        try Self.refuse(CallerRules.asker(askers: askers, device: device))
    }

    // MARK: - Revocation ends access

    /// A stored entry that revokes devices ends them (`private.end_revoked_device`): the
    /// credential (a placeholder ended at once when none was registered), the row's activity,
    /// their push tokens (`private.end_revoked_device_pushes`), the envelopes addressed to them.
    /// A log may name any id: another user's device (its row or its credential) is not this
    /// user's to end, and nothing of it changes.
    static func endRevokedDevices(_ db: Database, user: String, entry: String) throws {
        guard let userID = UUID(uuidString: user) else { return }
        let revoked = TrustedDevices.revoked(by: entry, user: userID)
        let stamp = now
        for id in revoked.map(\.canonical) {
            let foreign = try Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS (SELECT 1 FROM devices WHERE id = ? AND user_id <> ?)
                        OR EXISTS (SELECT 1 FROM device_credentials WHERE device_id = ? AND user_id <> ?)
                    """,
                arguments: [id, user, id, user])
            // Unknown (no answer) ends the device: a revocation fails closed.
            if foreign == true { continue }
            try db.execute(
                sql:
                    "UPDATE device_credentials SET ended_at = coalesce(ended_at, ?) WHERE device_id = ? AND user_id = ?",
                arguments: [stamp, id, user])
            try db.execute(
                sql: """
                    INSERT INTO device_credentials (device_id, user_id, hash, registered_at, ended_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (device_id) DO NOTHING
                    """,
                arguments: [id, user, Data(SHA256.hash(Array((UUID().canonical + id).utf8))), stamp, stamp])
            try db.execute(
                sql: "UPDATE devices SET is_active = 0, updated_at = ? WHERE id = ? AND user_id = ? AND is_active",
                arguments: [stamp, id, user])
            // Its pushes end with it: what was queued for its tokens is not sent, nothing new is queued.
            try db.execute(
                sql: """
                    UPDATE push_tokens SET is_valid = 0, updated_at = ? WHERE device_id = ? AND user_id = ? AND is_valid
                    """,
                arguments: [stamp, id, user])
            try db.execute(
                sql: """
                    DELETE FROM agent_coding_session_secrets WHERE device_id = ?
                        AND session_id IN (SELECT id FROM agent_coding_sessions WHERE user_id = ?)
                    """,
                arguments: [id, user])
        }
    }
}
