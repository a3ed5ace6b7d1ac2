import Foundation
import SecretCrypto
import SyncModel

/// The tables a pull keeps a cursor for (when the remote has no pull feed; with one, the feed's
/// cursor covers them all).
public enum CursorTable: String, Sendable, CaseIterable {
    case repositories, sessions, envelopes
}

/// A value a store setting holds, stored as text.
public protocol StoreSettingValue: Sendable {
    /// Reads the stored text; `nil` when it is not a value of this type.
    init?(settingText: String)
    /// The text stored.
    var settingText: String { get }
}

extension String: StoreSettingValue {
    public init?(settingText: String) { self = settingText }
    public var settingText: String { self }
}

extension Int64: StoreSettingValue {
    public init?(settingText: String) { self.init(settingText, radix: 10) }
    public var settingText: String { String(self) }
}

extension Bool: StoreSettingValue {
    public init?(settingText: String) {
        switch settingText {
        case "true": self = true
        case "false": self = false
        default: return nil
        }
    }
    public var settingText: String { self ? "true" : "false" }
}

extension StoreSettingValue where Self: RawRepresentable, RawValue == String {
    public init?(settingText: String) { self.init(rawValue: settingText) }
    public var settingText: String { rawValue }
}

extension PushEnvironment: StoreSettingValue {}

/// A named setting of a store and the type of its value: the modules that keep bookkeeping in
/// the store declare theirs as static members (`StoreSetting.remoteAddress`, ...).
public struct StoreSetting<Value: StoreSettingValue>: Sendable, Hashable {
    /// The key in the `settings` table.
    public let key: String

    /// Declares a setting.
    public init(_ key: String) { self.key = key }
}

extension StoreSetting where Value == String {
    /// The remote this store syncs with (`embedded:PATH` or a project URL), saved by login.
    public static let remoteAddress = StoreSetting("remote")
    /// The pinned identity public key (standard base64).
    static let pinnedIdentityKey = StoreSetting("trust.identity_key")
    /// The device's APNs token (a phone), sent with its device row.
    public static let apnsToken = StoreSetting("apns.token")
}

extension StoreSetting where Value == PushEnvironment {
    /// The APNs environment of ``apnsToken``.
    public static let apnsEnvironment = StoreSetting("apns.environment")
}

extension StoreSetting where Value == Bool {
    /// Whether the person allowed pushes on this device.
    public static let apnsPushEnabled = StoreSetting("apns.push_enabled")
}
