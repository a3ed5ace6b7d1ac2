import Foundation

extension JSONValue {
    /// The value as JSON text on one line, members in their order: what a hook prints.
    public var compactText: String {
        var out = ""
        write(into: &out, indent: nil, level: 0)
        return out
    }

    /// The value as JSON text indented by two spaces, members in their order, with a final
    /// newline: the layout an agent writes its settings files in (`JSON.stringify(value, null, 2)`).
    public var prettyText: String {
        var out = ""
        write(into: &out, indent: "  ", level: 0)
        return out + "\n"
    }

    func write(into out: inout String, indent: String?, level: Int) {
        func newline(_ level: Int) {
            guard let indent else { return }
            out += "\n" + String(repeating: indent, count: level)
        }
        switch self {
        case .object(let members):
            guard !members.isEmpty else {
                out += "{}"
                return
            }
            out += "{"
            for (position, (name, value)) in members.enumerated() {
                if position > 0 { out += "," }
                newline(level + 1)
                Self.quote(name, into: &out)
                out += indent == nil ? ":" : ": "
                value.write(into: &out, indent: indent, level: level + 1)
            }
            newline(level)
            out += "}"
        case .array(let items):
            guard !items.isEmpty else {
                out += "[]"
                return
            }
            out += "["
            for (position, item) in items.enumerated() {
                if position > 0 { out += "," }
                newline(level + 1)
                item.write(into: &out, indent: indent, level: level + 1)
            }
            newline(level)
            out += "]"
        case .string(let text): Self.quote(text, into: &out)
        case .number(let text): out += text
        case .bool(let flag): out += flag ? "true" : "false"
        case .null: out += "null"
        }
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\n`, `\t`... or `\u00XX`,
    /// everything else as itself.
    static func quote(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
