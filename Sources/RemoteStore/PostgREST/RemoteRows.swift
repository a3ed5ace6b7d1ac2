import Foundation
import SyncModel

/// Columns that old deployments may lack: sent only when the row has a value, so a row without
/// one neither fails on a missing column nor clears another writer's value.
enum OptionalColumns {
    static let sessions: Set<String> = ["title"]
    static let devices: Set<String> = ["capabilities"]
}

extension RemoteDevice {
    /// The columns a listing reads: what ``init(json:)`` decodes, and nothing a device may not read.
    static let listedColumns =
        "id,user_id,name,device_type,hostname,is_active,device_role,public_key,is_trusted,last_seen_at,capabilities"
}
