import Foundation
import SyncModel

/// How PostgREST wants values written in URLs and bodies (postgrest.md).
enum PostgREST {
    /// Characters left as they are in a query component; everything else is percent-encoded.
    /// `+` is not among them: PostgREST decodes `+` as a space, so timestamps carry `%2B`.
    static let queryAllowed: CharacterSet = {
        var set = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        set.insert(charactersIn: "-._~(),:*")
        return set
    }()

    /// Percent-encodes one query name or value.
    static func encodeComponent(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: queryAllowed) ?? text
    }

    /// A value inside `in.(...)` or `or=(...)`: wrapped in double quotes, with `\` and `"`
    /// escaped, whenever it holds a character PostgREST's grammar reserves there.
    static func listValue(_ value: String) -> String {
        let reserved = CharacterSet(charactersIn: ",.:()\"\\ ")
        guard value.isEmpty || value.unicodeScalars.contains(where: reserved.contains) else { return value }
        let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return "\"\(escaped)\""
    }

    /// `in.(a,b,c)` with each value quoted as needed.
    static func inList(_ values: some Sequence<String>) -> String {
        "in.(" + values.map(listValue).joined(separator: ",") + ")"
    }

    /// The query string of `items`, each name and value percent-encoded.
    static func queryString(_ items: [(String, String)]) -> String {
        items.map { "\(encodeComponent($0.0))=\(encodeComponent($0.1))" }.joined(separator: "&")
    }

    /// The filter selecting rows strictly after `values` in the order of `columns` (a keyset page).
    static func afterKey(columns: [String], values: [String]) -> (String, String) {
        if columns.count == 1 { return (columns[0], "gt.\(values[0])") }
        // (a, b) > (x, y)  <=>  a > x OR (a = x AND b > y), and so on for more columns.
        var terms: [String] = []
        for index in columns.indices {
            var parts = (0..<index).map { "\(columns[$0]).eq.\(listValue(values[$0]))" }
            parts.append("\(columns[index]).gt.\(listValue(values[index]))")
            terms.append(parts.count == 1 ? parts[0] : "and(" + parts.joined(separator: ",") + ")")
        }
        return ("or", "(" + terms.joined(separator: ",") + ")")
    }
}

/// One named argument of an RPC call.
public struct RPCArgument: Sendable, Hashable {
    let value: RowValue

    /// A string (UUIDs, timestamps and text go as strings).
    public static func string(_ text: String?) -> RPCArgument { RPCArgument(value: .string(text)) }
    /// An integer.
    public static func int(_ number: Int?) -> RPCArgument { RPCArgument(value: .int(number)) }
    /// A boolean.
    public static func bool(_ flag: Bool) -> RPCArgument { RPCArgument(value: .bool(flag)) }
    /// JSON `null`: the argument does not apply.
    public static let null = RPCArgument(value: .null)
    /// A JSON array of strings and nulls (a `text[]` parameter).
    public static func strings(_ items: [String?]) -> RPCArgument {
        var out = "["
        for (index, item) in items.enumerated() {
            if index > 0 { out.append(",") }
            if let item { RowJSONWriter.string(item, into: &out) } else { out.append("null") }
        }
        out.append("]")
        return RPCArgument(value: .json(out))
    }
}
