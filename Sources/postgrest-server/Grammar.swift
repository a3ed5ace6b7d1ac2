import Foundation

/// An error answered as PostgREST answers it: HTTP status and the JSON error body.
struct APIError: Error {
    var status: Int
    var code: String
    var message: String
    var details: String? = nil
    var hint: String? = nil
    var headers: [(String, String)] = []

    static func parse(_ message: String, details: String? = nil) -> APIError {
        APIError(status: 400, code: "PGRST100", message: message, details: details)
    }
}

/// A condition tree from query parameters: `col=op.value`, `or=(...)`, `and=(...)`, `not.`.
indirect enum Condition {
    case filter(column: String, negated: Bool, op: String, value: FilterValue)
    case group(isOr: Bool, negated: Bool, [Condition])
}

enum FilterValue {
    case single(String)
    case list([String])
}

/// Parses PostgREST's filter grammar.
enum Grammar {
    static let operators: Set<String> = ["eq", "neq", "gt", "gte", "lt", "lte", "like", "ilike", "in", "is", "isdistinct"]
    static let reservedParameters: Set<String> = ["select", "order", "limit", "offset", "on_conflict", "columns"]

    /// A top-level `column=value` parameter, where the value after the operator is literal.
    static func topLevel(column: String, _ text: String) throws -> Condition {
        if column == "or" || column == "and" || column == "not.or" || column == "not.and" {
            let negated = column.hasPrefix("not.")
            var scanner = Scanner(text)
            let items = try scanner.list()
            guard scanner.atEnd else { throw APIError.parse("\"failed to parse logic tree (\(text))\" (line 1, column \(scanner.position + 1))") }
            return .group(isOr: column.hasSuffix("or"), negated: negated, items)
        }
        var rest = Substring(text)
        var negated = false
        if rest.hasPrefix("not.") {
            negated = true
            rest = rest.dropFirst(4)
        }
        guard let dot = rest.firstIndex(of: ".") else {
            throw APIError.parse("\"failed to parse filter (\(text))\" (line 1, column 1)", details: "unexpected end of input expecting operator")
        }
        let op = String(rest[..<dot])
        let value = String(rest[rest.index(after: dot)...])
        guard operators.contains(op) else {
            throw APIError.parse("\"failed to parse filter (\(text))\" (line 1, column 1)", details: "unknown operator \(op)")
        }
        if op == "in" {
            var scanner = Scanner(value)
            let values = try scanner.valueList()
            guard scanner.atEnd else { throw APIError.parse("\"failed to parse filter (\(text))\" (line 1, column \(scanner.position + 1))") }
            return .filter(column: column, negated: negated, op: op, value: .list(values))
        }
        return .filter(column: column, negated: negated, op: op, value: .single(value))
    }

    struct Scanner {
        let characters: [Character]
        var position = 0

        init(_ text: String) { characters = Array(text) }

        var atEnd: Bool { position >= characters.count }
        var peek: Character? { atEnd ? nil : characters[position] }

        mutating func expect(_ character: Character) throws {
            guard peek == character else {
                throw APIError.parse("\"failed to parse logic tree (\(String(characters)))\" (line 1, column \(position + 1))",
                                     details: "unexpected \(peek.map { "\"\($0)\"" } ?? "end of input") expecting \"\(character)\"")
            }
            position += 1
        }

        mutating func consume(_ prefix: String) -> Bool {
            let p = Array(prefix)
            guard position + p.count <= characters.count, Array(characters[position..<position + p.count]) == p else { return false }
            position += p.count
            return true
        }

        /// `(item,item,...)`
        mutating func list() throws -> [Condition] {
            try expect("(")
            var items: [Condition] = []
            repeat {
                items.append(try item())
            } while consume(",")
            try expect(")")
            return items
        }

        /// `[not.](and|or)(...)` or `column.[not.]op.value`
        mutating func item() throws -> Condition {
            let start = position
            let negated = consume("not.")
            for (word, isOr) in [("and(", false), ("or(", true)] where consume(word) {
                position -= 1
                return .group(isOr: isOr, negated: negated, try list())
            }
            position = start
            let column = word(until: ".")
            try expect(".")
            let filterNegated = consume("not.")
            let op = word(until: ".")
            guard Grammar.operators.contains(op) else {
                throw APIError.parse("\"failed to parse logic tree (\(String(characters)))\" (line 1, column \(position + 1))", details: "unknown operator \(op)")
            }
            try expect(".")
            if op == "in" { return .filter(column: column, negated: filterNegated, op: op, value: .list(try valueList())) }
            return .filter(column: column, negated: filterNegated, op: op, value: .single(try value()))
        }

        mutating func word(until stop: Character) -> String {
            var out = ""
            while let c = peek, c != stop, c != ",", c != ")", c != "(" {
                out.append(c)
                position += 1
            }
            return out
        }

        /// A value inside a list: double-quoted with `\` escapes, or bare up to `,` or `)`.
        mutating func value() throws -> String {
            if peek == "\"" {
                position += 1
                var out = ""
                while let c = peek, c != "\"" {
                    if c == "\\" {
                        position += 1
                        guard let escaped = peek else { break }
                        out.append(escaped)
                    } else {
                        out.append(c)
                    }
                    position += 1
                }
                try expect("\"")
                return out
            }
            var out = ""
            var depth = 0
            while let c = peek {
                if depth == 0 && (c == "," || c == ")") { break }
                if c == "(" { depth += 1 }
                if c == ")" { depth -= 1 }
                out.append(c)
                position += 1
            }
            return out
        }

        /// `(v1,"v,2",v3)`
        mutating func valueList() throws -> [String] {
            try expect("(")
            var values: [String] = []
            if peek == ")" {
                position += 1
                return values
            }
            repeat {
                values.append(try value())
            } while consume(",")
            try expect(")")
            return values
        }
    }

    /// `select=a,b:c,d::text` -> (alias, column, cast)
    static func select(_ text: String) throws -> [(alias: String?, column: String, cast: String?)] {
        try text.split(separator: ",", omittingEmptySubsequences: false).map { raw in
            var item = raw.trimmingCharacters(in: .whitespaces)
            guard !item.isEmpty else { throw APIError.parse("\"failed to parse select parameter (\(text))\" (line 1, column 1)") }
            var cast: String?
            if let range = item.range(of: "::") {
                cast = String(item[range.upperBound...])
                item = String(item[..<range.lowerBound])
            }
            var alias: String?
            if let colon = item.firstIndex(of: ":") {
                alias = String(item[..<colon])
                item = String(item[item.index(after: colon)...])
            }
            if item.contains("(") { throw APIError(status: 400, code: "PGRST200", message: "Could not find a relationship in the schema cache") }
            return (alias, item, cast)
        }
    }

    /// `order=a.desc.nullslast,b` -> SQL terms
    static func order(_ text: String) throws -> [(column: String, descending: Bool, nulls: String?)] {
        try text.split(separator: ",").map { term in
            let parts = term.split(separator: ".").map(String.init)
            guard let column = parts.first, !column.isEmpty else { throw APIError.parse("\"failed to parse order (\(text))\" (line 1, column 1)") }
            var descending = false
            var nulls: String?
            for modifier in parts.dropFirst() {
                switch modifier {
                case "asc": descending = false
                case "desc": descending = true
                case "nullsfirst": nulls = "FIRST"
                case "nullslast": nulls = "LAST"
                default: throw APIError.parse("\"failed to parse order (\(text))\" (line 1, column 1)", details: "unexpected \"\(modifier)\"")
                }
            }
            return (column, descending, nulls)
        }
    }

    /// Decodes a query string the way PostgREST (Warp) does: `+` is a space, `%XX` a byte.
    static func decodeQuery(_ raw: String) -> [(String, String)] {
        raw.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String {
                let spaced = s.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }
}

/// Builds SQL text with `$n` parameters.
struct SQLBuilder {
    var binds: [String?] = []

    mutating func bind(_ value: String?) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    static func identifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// SQL for a condition tree against `table`.
    mutating func condition(_ condition: Condition, table: SchemaCache.Table) throws -> String {
        switch condition {
        case let .group(isOr, negated, items):
            let inner = try items.map { try self.condition($0, table: table) }.joined(separator: isOr ? " OR " : " AND ")
            return (negated ? "NOT " : "") + "(" + (inner.isEmpty ? "TRUE" : inner) + ")"
        case let .filter(column, negated, op, value):
            guard let info = table.column(column) else {
                throw APIError(status: 400, code: "42703", message: "column \(table.name).\(column) does not exist")
            }
            let name = "_t." + Self.identifier(column)
            let type = info.type
            let sql: String
            switch (op, value) {
            case let ("in", .list(values)):
                if values.isEmpty {
                    sql = "FALSE"
                } else {
                    let json = String(decoding: try JSONSerialization.data(withJSONObject: values), as: UTF8.self)
                    sql = "\(name) = ANY(ARRAY(SELECT _v::\(type) FROM json_array_elements_text(\(bind(json))::json) AS _v))"
                }
            case let ("is", .single(text)):
                switch text.lowercased() {
                case "null": sql = "\(name) IS NULL"
                case "true": sql = "\(name) IS TRUE"
                case "false": sql = "\(name) IS FALSE"
                case "unknown": sql = "\(name) IS UNKNOWN"
                default:
                    throw APIError.parse("\"failed to parse filter (is.\(text))\" (line 1, column 4)", details: "unexpected \"\(text)\" expecting null or trilean value (unknown, true, false)")
                }
            case let ("like", .single(text)), let ("ilike", .single(text)):
                sql = "\(name)::text \(op == "like" ? "LIKE" : "ILIKE") \(bind(text.replacingOccurrences(of: "*", with: "%")))"
            case let ("isdistinct", .single(text)):
                sql = "\(name) IS DISTINCT FROM \(bind(text))::\(type)"
            case let (_, .single(text)):
                let symbol = ["eq": "=", "neq": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="][op]!
                sql = "\(name) \(symbol) \(bind(text))::\(type)"
            default:
                throw APIError.parse("\"failed to parse filter (\(op))\" (line 1, column 1)")
            }
            return negated ? "NOT (\(sql))" : sql
        }
    }
}
