import Foundation

/// A JSON value that keeps what a person wrote: members in their order, numbers as their text.
///
/// An agent's settings file is the person's: rewriting it must keep every key where it was and
/// every number as it was spelled, which `JSONSerialization` does not promise. Hook input is read
/// with it too, so the same strict reader (RFC 8259, a depth bound, no duplicate member names)
/// judges everything this module reads.
public enum JSONValue: Sendable, Hashable {
    case object([(String, JSONValue)])
    case array([JSONValue])
    case string(String)
    /// The number's text exactly as written.
    case number(String)
    case bool(Bool)
    case null

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.array(let a), .array(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.bool(let a), .bool(let b)): return a == b
        case (.null, .null): return true
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .object(let members):
            hasher.combine(0)
            for (name, value) in members {
                hasher.combine(name)
                hasher.combine(value)
            }
        case .array(let items): hasher.combine(items)
        case .string(let text): hasher.combine(text)
        case .number(let text): hasher.combine(text)
        case .bool(let flag): hasher.combine(flag)
        case .null: hasher.combine(1)
        }
    }

    /// The member `name` of an object, or `nil`.
    public subscript(name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == name }?.1
    }

    /// The string, or `nil`.
    public var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The boolean, or `nil`.
    public var bool: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The array's items, or `nil`.
    public var array: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// The object's members in order, or `nil`.
    public var members: [(String, JSONValue)]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// An object with `name` set to `value`: replaced where it stood, else appended.
    public func setting(_ name: String, to value: JSONValue) -> JSONValue {
        guard case .object(var members) = self else { return self }
        if let index = members.firstIndex(where: { $0.0 == name }) {
            members[index].1 = value
        } else {
            members.append((name, value))
        }
        return .object(members)
    }

    /// An object without the member `name`.
    public func removing(_ name: String) -> JSONValue {
        guard case .object(let members) = self else { return self }
        return .object(members.filter { $0.0 != name })
    }
}

/// JSON text that could not be read, with where.
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// 1-based line and column (in Unicode scalars) of the first byte that could not be read.
    public var line: Int
    public var column: Int
    /// What was expected there, in a few words; never the text itself.
    public var reason: String

    /// Creates an error.
    public init(line: Int, column: Int, reason: String) {
        self.line = line
        self.column = column
        self.reason = reason
    }

    public var description: String { "line \(line), column \(column): \(reason)" }
}
