import Foundation

/// The one JSON style of everything this project prints or hands an app: every `--json` of
/// `sync-cli`, `SyncReport.json()`, `WatchTick.json()` (docs/cli.md, "JSON").
///
/// - Keys are camelCase, an id's suffix spelled `Id` (`deviceId`, `rowId`): a key written
///   `deviceID`, `device_id` or `device-id` in Swift is printed `deviceId`. Only the keys of
///   types are rewritten; the keys of a dictionary value (an APNs payload) are kept as they are.
/// - A UUID is lowercase, as the remote and every human line print it.
/// - A date is RFC 3339 in UTC with `Z` (`2026-11-27T08:00:00Z`).
/// - A boolean is a JSON boolean.
public enum JSONStyle {
    /// An encoder of this style: sorted keys, slashes unescaped, pretty-printed or one line.
    public static func encoder(pretty: Bool = true) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        encoder.keyEncodingStrategy = .custom { path in StyleKey(key(path.last?.stringValue ?? "")) }
        return encoder
    }

    /// `value` as JSON text of this style, UUIDs lowercase.
    public static func text<Value: Encodable>(_ value: Value, pretty: Bool = true) throws -> String {
        lowercasingUUIDs(String(decoding: try encoder(pretty: pretty).encode(value), as: UTF8.self))
    }

    /// A date as this style writes it: RFC 3339, UTC, `Z`.
    public static func date(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }

    /// A key in this style: `device_id`, `device-id` and `deviceID` become `deviceId`.
    public static func key(_ key: String) -> String {
        var out = ""
        var upperNext = false
        for character in key {
            if character == "_" || character == "-" {
                upperNext = !out.isEmpty
                continue
            }
            out.append(upperNext ? Character(character.uppercased()) : character)
            upperNext = false
        }
        // `ID` after a lowercase letter, at the end or before another word: `Id`.
        return out.replacing(/([a-z0-9])ID(?=$|[A-Z])/) { "\($0.1)Id" }
    }

    /// JSON text with every string that is exactly an uppercase UUID in lowercase (Foundation
    /// encodes a `UUID` in uppercase).
    public static func lowercasingUUIDs(_ json: String) -> String {
        json.replacing(/"([0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12})"/) {
            "\"" + $0.1.lowercased() + "\""
        }
    }

    struct StyleKey: CodingKey {
        let stringValue: String
        init(_ value: String) { stringValue = value }
        init?(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }
}
