import EnvelopeDigest
import Foundation
import GRDB
import RemoteContract
import SyncModel
import Synchronization

// The device rows: a device writes its own, and lists the user's.
extension EmbeddedRemoteStore {
    public func upsertOwnDevice(_ device: OwnDeviceRow) async throws {
        try checkOwner(device.userID)
        try await write("upserting device") { db in
            try self.checkExisting(db, table: "devices", id: device.id.canonical)
            try self.checkOwnRow(db, device: device.id.canonical)
            // The APNs columns only when the row names them (a device registered for pushes).
            try Self.insert(db, "devices", device.jsonRow)
            if let versions = device.envelopeVersions {
                // Set this device's key, keep every other key (json_patch merges objects).
                try db.execute(
                    sql: "UPDATE devices SET capabilities = json_patch(coalesce(capabilities, '{}'), ?) WHERE id = ?",
                    arguments: [EnvelopeCapability.merged(nil, versions: versions), device.id.canonical])
            }
        }
    }

    public func listDevices() async throws -> [RemoteDevice] {
        return try await read("listing devices", gate: .registered, else: []) { db in
            return try Row.fetchAll(
                db, sql: "SELECT * FROM devices WHERE user_id = ? ORDER BY id", arguments: [self.me]
            ).map {
                row in
                try RemoteDevice(json: Self.json(row))
            }
        }
    }

    /// Replaces a device's `capabilities` (JSON object text), as another client of the device
    /// would; for tests and demos.
    package func setCapabilities(deviceID: UUID, json: String) async throws {
        try await write("setting capabilities") { db in
            try db.execute(
                sql: "UPDATE devices SET capabilities = json(?) WHERE id = ? AND user_id = ?",
                arguments: [json, deviceID.canonical, self.me])
        }
    }

    /// A device's `capabilities`, JSON text.
    package func capabilities(deviceID: UUID) async throws -> String? {
        return try await read("reading capabilities") { db in
            try String.fetchOne(
                db, sql: "SELECT capabilities FROM devices WHERE id = ? AND user_id = ?",
                arguments: [deviceID.canonical, self.me])
        }
    }

    /// Sets trust fields, as the trust flow would (the sync engine never does); for tests and demos.
    package func setTrust(
        deviceID: UUID, isTrusted: Bool? = nil, role: DeviceTrustRole? = nil, isActive: Bool? = nil,
        publicKey: String?? = nil
    ) async throws {
        try await write("setting trust") { db in
            let changes: [(column: String, value: (any DatabaseValueConvertible)??)] = [
                ("is_trusted", isTrusted), ("device_role", role?.rawValue), ("is_active", isActive),
                ("public_key", publicKey),
            ]
            for change in changes {
                guard let value = change.value else { continue } // not given: left as it is
                try db.execute(
                    sql: "UPDATE devices SET \(change.column) = ? WHERE id = ? AND user_id = ?",
                    arguments: [value, deviceID.canonical, self.me])
            }
        }
    }
}
