import Foundation

/// An error answered as PostgREST answers it: HTTP status and the JSON error body.
package struct APIError: Error {
    package var status: Int
    package var code: String
    package var message: String
    package var details: String?
    package var hint: String?
    package var headers: [(String, String)]

    package init(
        status: Int, code: String, message: String, details: String? = nil, hint: String? = nil,
        headers: [(String, String)] = []
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.hint = hint
        self.headers = headers
    }

    package static func parse(_ message: String, details: String? = nil) -> APIError {
        APIError(status: 400, code: "PGRST100", message: message, details: details)
    }
}

/// A condition tree from query parameters: `col=op.value`, `or=(...)`, `and=(...)`, `not.`.
package indirect enum Condition {
    case filter(column: String, negated: Bool, op: String, value: FilterValue)
    case group(isOr: Bool, negated: Bool, [Condition])
}

package enum FilterValue {
    case single(String)
    case list([String])
}

/// Parses PostgREST's filter grammar.
package enum Grammar {
    package static let operators: Set<String> = [
        "eq", "neq", "gt", "gte", "lt", "lte", "like", "ilike", "in", "is", "isdistinct",
    ]
    package static let reservedParameters: Set<String> = [
        "select", "order", "limit", "offset", "on_conflict", "columns",
    ]

    /// A top-level `column=value` parameter, where the value after the operator is literal.
    package static func topLevel(column: String, _ text: String) throws -> Condition {
        if column == "or" || column == "and" || column == "not.or" || column == "not.and" {
            let negated = column.hasPrefix("not.")
            var scanner = Scanner(text)
            let items = try scanner.list()
            guard scanner.atEnd else {
                throw APIError.parse(
                    "\"failed to parse logic tree (\(text))\" (line 1, column \(scanner.position + 1))")
            }
            return .group(isOr: column.hasSuffix("or"), negated: negated, items)
        }
        var rest = Substring(text)
        var negated = false
        if rest.hasPrefix("not.") {
            negated = true
            rest = rest.dropFirst(4)
        }
        guard let dot = rest.firstIndex(of: ".") else {
            throw APIError.parse(
                "\"failed to parse filter (\(text))\" (line 1, column 1)",
                details: "unexpected end of input expecting operator")
        }
        let op = String(rest[..<dot])
        let value = String(rest[rest.index(after: dot)...])
        guard operators.contains(op) else {
            throw APIError.parse(
                "\"failed to parse filter (\(text))\" (line 1, column 1)", details: "unknown operator \(op)")
        }
        if op == "in" {
            var scanner = Scanner(value)
            let values = try scanner.valueList()
            guard scanner.atEnd else {
                throw APIError.parse("\"failed to parse filter (\(text))\" (line 1, column \(scanner.position + 1))")
            }
            return .filter(column: column, negated: negated, op: op, value: .list(values))
        }
        return .filter(column: column, negated: negated, op: op, value: .single(value))
    }

    /// Limits on a filter tree, so a hostile query cannot exhaust the parser's stack or the
    /// planner: PostgREST itself recurses without a bound; its gateway limits the URL.
    package static let maxDepth = 16
    package static let maxNodes = 1_000

    /// Scans over Unicode scalars, never grapheme clusters: a combining mark after `"` or `,`
    /// must not hide the punctuation from the grammar.
    struct Scanner {
        let characters: [Unicode.Scalar]
        var position = 0
        var depth = 0
        var nodes = 0

        init(_ text: String) { characters = Array(text.unicodeScalars) }

        var atEnd: Bool { position >= characters.count }
        var peek: Unicode.Scalar? { atEnd ? nil : characters[position] }
        var text: String {
            var s = ""
            s.unicodeScalars.append(contentsOf: characters)
            return s
        }

        mutating func expect(_ character: Unicode.Scalar) throws {
            guard peek == character else {
                throw APIError.parse(
                    "\"failed to parse logic tree (\(text))\" (line 1, column \(position + 1))",
                    details: "unexpected \(peek.map { "\"\($0)\"" } ?? "end of input") expecting \"\(character)\"")
            }
            position += 1
        }

        mutating func consume(_ prefix: String) -> Bool {
            let p = Array(prefix.unicodeScalars)
            guard position + p.count <= characters.count, Array(characters[position..<position + p.count]) == p else {
                return false
            }
            position += p.count
            return true
        }

        /// `(item,item,...)`
        mutating func list() throws -> [Condition] {
            depth += 1
            guard depth <= Grammar.maxDepth else {
                throw APIError.parse(
                    "\"failed to parse logic tree\" (line 1, column \(position + 1))",
                    details: "logic tree nested deeper than \(Grammar.maxDepth) levels")
            }
            defer { depth -= 1 }
            try expect("(")
            var items: [Condition] = []
            repeat {
                nodes += 1
                guard nodes <= Grammar.maxNodes else {
                    throw APIError.parse(
                        "\"failed to parse logic tree\" (line 1, column \(position + 1))",
                        details: "more than \(Grammar.maxNodes) conditions")
                }
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
            guard Grammar.isIdentifier(column) else {
                throw APIError.parse(
                    "\"failed to parse logic tree (\(text))\" (line 1, column \(start + 1))",
                    details: "invalid column name")
            }
            try expect(".")
            let filterNegated = consume("not.")
            let op = word(until: ".")
            guard Grammar.operators.contains(op) else {
                throw APIError.parse(
                    "\"failed to parse logic tree (\(text))\" (line 1, column \(position + 1))",
                    details: "unknown operator")
            }
            try expect(".")
            if op == "in" {
                return .filter(column: column, negated: filterNegated, op: op, value: .list(try valueList()))
            }
            return .filter(column: column, negated: filterNegated, op: op, value: .single(try value()))
        }

        mutating func word(until stop: Unicode.Scalar) -> String {
            var out = ""
            while let c = peek, c != stop, c != ",", c != ")", c != "(" {
                out.unicodeScalars.append(c)
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
                        out.unicodeScalars.append(escaped)
                    } else {
                        out.unicodeScalars.append(c)
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
                out.unicodeScalars.append(c)
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
                guard values.count <= Grammar.maxNodes else {
                    throw APIError.parse(
                        "\"failed to parse filter\"", details: "more than \(Grammar.maxNodes) values in a list")
                }
            } while consume(",")
            try expect(")")
            return values
        }
    }

    /// An identifier a request may name (a column, an alias, an `on_conflict` target): ASCII
    /// letters, digits and `_`, not starting with a digit, at most 63 bytes (PostgreSQL's
    /// NAMEDATALEN). An explicit whitelist, checked on bytes: nothing else reaches the SQL text.
    package static func isIdentifier(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard let first = bytes.first, bytes.count <= 63, !(0x30...0x39).contains(first) else { return false }
        return bytes.allSatisfy {
            (0x61...0x7A).contains($0) || (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F
        }
    }

    /// The casts `select=col::type` may ask for, each mapped to the SQL written for it. A cast
    /// outside this list is refused; the request's text never reaches the SQL.
    package static let casts: [String: String] = [
        "text": "text", "varchar": "text", "uuid": "uuid", "json": "json", "jsonb": "jsonb",
        "int": "integer", "int4": "integer", "integer": "integer", "int2": "smallint", "smallint": "smallint",
        "int8": "bigint", "bigint": "bigint", "numeric": "numeric", "real": "real", "float4": "real",
        "float8": "double precision", "bool": "boolean", "boolean": "boolean", "date": "date",
        "timestamptz": "timestamptz", "timestamp": "timestamp", "bytea": "bytea",
    ]

    /// One item of `select=`: `column`, `alias:column`, `column::cast`, `alias:column::cast` or `*`.
    package struct SelectItem {
        package var alias: String?
        package var column: String
        /// The SQL type name from ``Grammar/casts``, never the request's text.
        package var castSQL: String?
    }

    /// `select=a,b:c,d::text`. Every column and alias must be an ``isIdentifier(_:)``, every
    /// cast one of ``casts``; embedding (`rel(...)`) is not supported.
    package static func select(_ text: String) throws -> [SelectItem] {
        func refuse(_ why: String) -> APIError {
            APIError.parse("\"failed to parse select parameter\" (line 1, column 1)", details: why)
        }
        let items = text.unicodeScalars.split(separator: ",", omittingEmptySubsequences: false)
        guard items.count <= 50 else { throw refuse("more than 50 items") }
        return try items.map { scalars in
            var item = String(String.UnicodeScalarView(scalars))
            item = item.trimmingCharacters(in: CharacterSet(charactersIn: " "))
            guard !item.isEmpty else { throw refuse("empty item") }
            if item.unicodeScalars.contains("(") {
                throw APIError(
                    status: 400, code: "PGRST200", message: "Could not find a relationship in the schema cache")
            }
            var castSQL: String?
            if let range = item.range(of: "::") {
                let cast = String(item[range.upperBound...]).lowercased()
                guard let sql = casts[cast] else { throw refuse("unsupported cast") }
                castSQL = sql
                item = String(item[..<range.lowerBound])
            }
            var alias: String?
            if let colon = item.unicodeScalars.firstIndex(of: ":") {
                let name = String(item.unicodeScalars[..<colon])
                guard isIdentifier(name) else { throw refuse("invalid alias") }
                alias = name
                item = String(item.unicodeScalars[item.unicodeScalars.index(after: colon)...])
            }
            guard item == "*" || isIdentifier(item) else { throw refuse("invalid column name") }
            guard item != "*" || (alias == nil && castSQL == nil) else { throw refuse("`*` takes no alias or cast") }
            return SelectItem(alias: alias, column: item, castSQL: castSQL)
        }
    }

    /// `order=a.desc.nullslast,b` -> SQL terms
    package static func order(_ text: String) throws -> [(column: String, descending: Bool, nulls: String?)] {
        let terms = text.split(separator: ",")
        guard terms.count <= 50 else {
            throw APIError.parse("\"failed to parse order\" (line 1, column 1)", details: "more than 50 terms")
        }
        return try terms.map { term in
            let parts = term.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard let column = parts.first, isIdentifier(column) else {
                throw APIError.parse("\"failed to parse order\" (line 1, column 1)", details: "invalid column name")
            }
            var descending = false
            var nulls: String?
            for modifier in parts.dropFirst() {
                switch modifier {
                case "asc": descending = false
                case "desc": descending = true
                case "nullsfirst": nulls = "FIRST"
                case "nullslast": nulls = "LAST"
                default:
                    throw APIError.parse("\"failed to parse order\" (line 1, column 1)", details: "unexpected modifier")
                }
            }
            return (column, descending, nulls)
        }
    }

    /// `columns=a,b` of an insert: the names, with quotes and spaces trimmed. Each must then
    /// be an ``isIdentifier(_:)`` naming a column of the table.
    package static func columns(_ text: String) -> Set<String> {
        Set(text.split(separator: ",").map { String($0).trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) })
    }

    /// `on_conflict=a,b`: the target names, spaces trimmed. Each must then name a column.
    package static func onConflict(_ text: String) -> [String] {
        text.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
    }

    /// Decodes a query string the way PostgREST (Warp) does: `+` is a space, `%XX` a byte.
    package static func decodeQuery(_ raw: String) -> [(String, String)] {
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
package struct SQLBuilder {
    package var binds: [String?] = []

    package init() {}

    package mutating func bind(_ value: String?) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    /// Quotes an identifier for SQL, on UTF-8 bytes: every `"` byte doubled (a `"` followed by
    /// a combining mark is still a `"` byte), a NUL refused. Callers pass names from the schema
    /// cache; request text is checked by ``Grammar/isIdentifier(_:)`` before it is looked up.
    package static func identifier(_ name: String) throws(APIError) -> String {
        var bytes: [UInt8] = [0x22]
        for byte in name.utf8 {
            guard byte != 0 else { throw APIError.parse("identifier contains a NUL byte") }
            if byte == 0x22 { bytes.append(0x22) }
            bytes.append(byte)
        }
        bytes.append(0x22)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// SQL for a condition tree against `table`.
    package mutating func condition(_ condition: Condition, table: SchemaTable) throws -> String {
        switch condition {
        case let .group(isOr, negated, items):
            let inner = try items.map { try self.condition($0, table: table) }.joined(
                separator: isOr ? " OR " : " AND ")
            return (negated ? "NOT " : "") + "(" + (inner.isEmpty ? "TRUE" : inner) + ")"
        case let .filter(column, negated, op, value):
            guard Grammar.isIdentifier(column), let info = table.column(column) else {
                throw APIError(status: 400, code: "42703", message: "column \(table.name).\(column) does not exist")
            }
            let name = "_t." + (try Self.identifier(info.name))
            let type = info.type
            let sql: String
            switch (op, value) {
            case let ("in", .list(values)):
                if values.isEmpty {
                    sql = "FALSE"
                } else {
                    let json = String(decoding: try JSONSerialization.data(withJSONObject: values), as: UTF8.self)
                    sql =
                        "\(name) = ANY(ARRAY(SELECT _v::\(type) FROM json_array_elements_text(\(bind(json))::json) AS _v))"
                }
            case let ("is", .single(text)):
                switch text.lowercased() {
                case "null": sql = "\(name) IS NULL"
                case "true": sql = "\(name) IS TRUE"
                case "false": sql = "\(name) IS FALSE"
                case "unknown": sql = "\(name) IS UNKNOWN"
                default:
                    throw APIError.parse(
                        "\"failed to parse filter (is.\(text))\" (line 1, column 4)",
                        details: "unexpected \"\(text)\" expecting null or trilean value (unknown, true, false)")
                }
            case let ("like", .single(text)), let ("ilike", .single(text)):
                sql =
                    "\(name)::text \(op == "like" ? "LIKE" : "ILIKE") \(bind(text.replacingOccurrences(of: "*", with: "%")))"
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
