import Foundation
import PostgRESTServerCore

/// A request reduced to what the REST handlers read.
struct RESTRequest: Sendable {
    var method: String
    var table: String
    var query: [(String, String)]
    var headers: [String: String]
    var body: String
}

/// What a request's transaction is given, as PostgREST gives it: the JWT's claims
/// (`request.jwt.claims`) and the request's headers, names in lowercase, as one JSON object
/// (`request.headers`), which is how a function reads a header such as `x-device-credential`.
struct RequestClaims: Sendable {
    var jwt: String
    var headers: [String: String]

    var headersJSON: String {
        let data = (try? JSONSerialization.data(withJSONObject: headers, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

/// `Prefer:` preferences, as PostgREST reads them.
struct Preferences {
    var resolution: String?
    var returning = "minimal"
    var count: String?
    var missingDefault = false
    var applied: [String] = []

    init(_ header: String?) {
        for token in (header ?? "").split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            let parts = token.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            switch (parts[0], parts[1]) {
            case ("resolution", "merge-duplicates"), ("resolution", "ignore-duplicates"):
                resolution = parts[1]
                applied.append(token)
            case ("return", "minimal"), ("return", "representation"), ("return", "headers-only"):
                returning = parts[1]
                applied.append(token)
            case ("count", "exact"), ("count", "planned"), ("count", "estimated"):
                count = parts[1]
                applied.append(token)
            case ("missing", "default"):
                missingDefault = true
                applied.append(token)
            default: break
            }
        }
    }
}

extension Backend {
    func handle(_ request: RESTRequest) async -> Answer {
        do {
            let (role, jwt) = try authenticate(
                authorization: request.headers["authorization"], apiKey: request.headers["apikey"])
            let claims = RequestClaims(jwt: jwt, headers: request.headers)
            let table = try await table(request.table)
            switch request.method {
            case "GET", "HEAD": return try await read(request, table: table, role: role, claims: claims)
            case "POST": return try await insert(request, table: table, role: role, claims: claims)
            case "PATCH": return try await update(request, table: table, role: role, claims: claims)
            case "DELETE": return try await delete(request, table: table, role: role, claims: claims)
            default:
                return .error(
                    APIError(status: 405, code: "PGRST117", message: "Unsupported HTTP method: \(request.method)"))
            }
        } catch let error as APIError {
            return .error(error)
        } catch {
            return .error(APIError(status: 500, code: "PGRST000", message: "internal error"))
        }
    }

    /// The `WHERE` clause of the request's filters.
    func whereClause(_ request: RESTRequest, table: SchemaCache.Table, builder: inout SQLBuilder) throws -> String {
        var conditions: [String] = []
        for (name, value) in request.query where !Grammar.reservedParameters.contains(name) {
            conditions.append(try builder.condition(try Grammar.topLevel(column: name, value), table: table))
        }
        return conditions.isEmpty ? "TRUE" : conditions.joined(separator: " AND ")
    }

    /// The schema cache's column for a name the request gave, which must be an identifier.
    @discardableResult
    func requireColumn(_ name: String, _ table: SchemaCache.Table) throws -> SchemaCache.Column {
        guard Grammar.isIdentifier(name), let column = table.column(name) else {
            throw APIError(status: 400, code: "42703", message: "column \(table.name).\(name) does not exist")
        }
        return column
    }

    func qualifiedName(_ table: SchemaCache.Table) throws -> String {
        try SQLBuilder.identifier(configuration.schema) + "." + SQLBuilder.identifier(table.name)
    }

    // MARK: GET

    func read(
        _ request: RESTRequest, table: SchemaCache.Table, role: String, claims: RequestClaims
    ) async throws -> Answer {
        var builder = SQLBuilder()
        let condition = try whereClause(request, table: table, builder: &builder)
        let parameters = Dictionary(request.query, uniquingKeysWith: { _, last in last })

        // Column names come from the schema cache; an alias is an identifier from the ASCII
        // allow-list (Grammar.isIdentifier), quoted byte-correctly; a cast is a fixed type name.
        var columns = "_t.*"
        if let select = parameters["select"], select != "*" {
            columns = try Grammar.select(select).map { item in
                if item.column == "*" { return "_t.*" }
                let column = try requireColumn(item.column, table)
                var sql = "_t." + (try SQLBuilder.identifier(column.name))
                if let cast = item.castSQL { sql += "::" + cast }
                return sql + " AS " + (try SQLBuilder.identifier(item.alias ?? column.name))
            }.joined(separator: ", ")
        }
        var orderSQL = ""
        if let order = parameters["order"] {
            orderSQL =
                " ORDER BY "
                + (try Grammar.order(order).map { term in
                    let column = try requireColumn(term.column, table)
                    return "_t." + (try SQLBuilder.identifier(column.name)) + (term.descending ? " DESC" : " ASC")
                        + (term.nulls.map { " NULLS \($0)" } ?? "")
                }.joined(separator: ", "))
        }

        // Range header, then limit/offset parameters, then db-max-rows.
        var offset = 0
        var limit: Int?
        if let range = request.headers["range"] {
            // Bounds are parsed as non-negative Ints and the span is clamped to db-max-rows
            // before any arithmetic, so `0-9223372036854775807` cannot overflow.
            let bounds = range.split(separator: "-", omittingEmptySubsequences: false)
            if bounds.count == 2, let lower = Int(bounds[0]), lower >= 0 {
                offset = lower
                if let upper = Int(bounds[1]) {
                    guard upper >= lower else {
                        throw APIError(
                            status: 416, code: "PGRST103", message: "Requested range not satisfiable",
                            details:
                                "The lower boundary must be lower than or equal to the upper boundary in the Range header."
                        )
                    }
                    limit = min(upper - lower, configuration.maxRows - 1) + 1
                }
            }
        }
        if let value = parameters["offset"] {
            guard let number = Int(value), number >= 0 else {
                throw APIError.parse("\"failed to parse offset parameter\"")
            }
            offset = number
        }
        if let value = parameters["limit"] {
            guard let number = Int(value), number >= 0 else {
                throw APIError.parse("\"failed to parse limit parameter\"")
            }
            limit = number
        }
        let effectiveLimit = min(limit ?? configuration.maxRows, configuration.maxRows)
        let preferences = Preferences(request.headers["prefer"])
        let wantsCount = preferences.count != nil

        let from = "FROM \(try qualifiedName(table)) AS _t WHERE \(condition)"
        let countSQL = "(SELECT count(*) \(from))::text"
        let sql = """
            SELECT _body::text, json_array_length(_body)::text, \(wantsCount ? countSQL : "NULL")
            FROM (SELECT coalesce(json_agg(_p), '[]'::json) AS _body FROM (SELECT \(columns) \(from)\(orderSQL) LIMIT \(effectiveLimit) OFFSET \(offset)) _p) _r
            """
        var rows = try await run(role: role, claims: claims, [(sql, builder.binds)])
        guard let row = rows.first, let body = row[0], let count = row[1].flatMap(Int.init) else {
            throw APIError(status: 500, code: "PGRST000", message: "unexpected empty result")
        }
        var total = row[2].flatMap(Int.init)
        if count == 0 && offset > 0 {
            if total == nil {
                rows = try await run(role: role, claims: claims, [("SELECT \(countSQL)", builder.binds)])
                total = rows.first?[0].flatMap(Int.init)
            }
            if let total, offset > total {
                throw APIError(
                    status: 416, code: "PGRST103", message: "Requested range not satisfiable",
                    details: "An offset of \(offset) was requested, but there are only \(total) rows.",
                    headers: [("Content-Range", "*/\(total)")])
            }
        }
        if request.headers["accept"]?.contains("application/vnd.pgrst.object+json") == true {
            guard count == 1 else {
                throw APIError(
                    status: 406, code: "PGRST116", message: "JSON object requested, multiple (or no) rows returned",
                    details: "The result contains \(count) rows")
            }
            let object = String(body.dropFirst().dropLast())
            return .json(
                200, request.method == "HEAD" ? "" : object,
                headers: [("Content-Range", "0-0/\(total.map(String.init) ?? "*")")])
        }
        let totalText = wantsCount ? total.map(String.init) ?? "*" : "*"
        let last = offset.addingReportingOverflow(count - 1)
        let contentRange =
            count > 0 && !last.overflow ? "\(offset)-\(last.partialValue)/\(totalText)" : "*/\(totalText)"
        let partial = wantsCount && (total.map { count < $0 } ?? false)
        var headers = [("Content-Range", contentRange)]
        if !preferences.applied.isEmpty {
            headers.append(
                ("Preference-Applied", preferences.applied.filter { $0.hasPrefix("count") }.joined(separator: ", ")))
        }
        headers.removeAll { $0.0 == "Preference-Applied" && $0.1.isEmpty }
        return .json(partial ? 206 : 200, request.method == "HEAD" ? "" : body, headers: headers)
    }

    // MARK: POST

    func insert(
        _ request: RESTRequest, table: SchemaCache.Table, role: String, claims: RequestClaims
    ) async throws -> Answer {
        let preferences = Preferences(request.headers["prefer"])
        let statement = try insertStatement(request, table: table, preferences: preferences)
        let rows = try await run(role: role, claims: claims, [statement])
        let inserted = rows.first?[0].flatMap(Int.init) ?? 0
        let affected = rows.first?[1].flatMap(Int.init) ?? 0
        let status = inserted > 0 || preferences.resolution == nil ? 201 : 200
        var headers: [(String, String)] = []
        if !preferences.applied.isEmpty {
            headers.append(("Preference-Applied", preferences.applied.joined(separator: ", ")))
        }
        headers.append(("Content-Range", "*/\(preferences.count != nil ? String(affected) : "*")"))
        if preferences.returning == "representation" {
            return .json(status, rows.first?[2] ?? "[]", headers: headers)
        }
        return Answer(status: status, headers: headers)
    }

    /// The INSERT (or upsert) of a POST and its one bound payload. Kept out of the async
    /// handler: Swift 6.3.1's optimizer crashes splitting that coroutine when this code is in it.
    func insertStatement(
        _ request: RESTRequest, table: SchemaCache.Table, preferences: Preferences
    ) throws -> (String, [String?]) {
        let parameters = Dictionary(request.query, uniquingKeysWith: { _, last in last })
        guard let parsed = try? JSONSerialization.jsonObject(with: Data(request.body.utf8)) else {
            throw APIError(status: 400, code: "PGRST102", message: "Empty or invalid json")
        }
        let objects: [[String: Any]]
        if let object = parsed as? [String: Any] {
            objects = [object]
        } else if let array = parsed as? [Any], let list = array as? [[String: Any]] {
            objects = list
        } else {
            throw APIError(status: 400, code: "PGRST102", message: "Empty or invalid json")
        }
        var keys: Set<String>
        if let columns = parameters["columns"] {
            keys = Grammar.columns(columns)
        } else {
            keys = Set(objects.first?.keys ?? [:].keys)
            guard objects.allSatisfy({ Set($0.keys) == keys }) else {
                throw APIError(status: 400, code: "PGRST102", message: "All object keys must match")
            }
        }
        for key in keys.sorted() where !Grammar.isIdentifier(key) || table.column(key) == nil {
            throw APIError(
                status: 400, code: "PGRST204",
                message: "Could not find the '\(key)' column of '\(table.name)' in the schema cache")
        }
        let columns = table.columns.map(\.name).filter(keys.contains)
        let list = try columns.map { name throws(APIError) in try SQLBuilder.identifier(name) }.joined(separator: ", ")

        var conflict = ""
        if let onConflict = parameters["on_conflict"], preferences.resolution != nil {
            conflict = try Grammar.onConflict(onConflict).map {
                try SQLBuilder.identifier(try requireColumn($0, table).name)
            }.joined(separator: ", ")
        } else if preferences.resolution != nil {
            conflict = try table.primaryKey.map { name throws(APIError) in try SQLBuilder.identifier(name) }.joined(
                separator: ", ")
        }
        // Which rows an upsert inserted, counted as PostgREST counts them (a setting the rows'
        // conditions move: +1 per source row, -1 per row updated instead), so that no system or
        // other column need be readable: a role may write a table it cannot read every column of.
        var onConflictSQL = ""
        var counting = ""
        if !conflict.isEmpty, let resolution = preferences.resolution {
            let updates = try columns.map { name throws(APIError) in
                let quoted = try SQLBuilder.identifier(name)
                return "\(quoted) = EXCLUDED.\(quoted)"
            }.joined(separator: ", ")
            if resolution == "ignore-duplicates" || updates.isEmpty {
                onConflictSQL = " ON CONFLICT (\(conflict)) DO NOTHING"
            } else {
                counting = " WHERE \(Self.countInserted(+1))"
                onConflictSQL = " ON CONFLICT (\(conflict)) DO UPDATE SET \(updates) WHERE \(Self.countInserted(-1))"
            }
        }
        // The body goes to PostgreSQL as it came, as PostgREST passes it (re-serialising it was
        // most of this server's time on a first push); a single object becomes a one-row array.
        let payload = parsed is [String: Any] ? "[" + request.body + "]" : request.body
        let name = try qualifiedName(table)
        let insertSQL =
            columns.isEmpty
            ? "INSERT INTO \(name) AS _t DEFAULT VALUES"
            : "INSERT INTO \(name) AS _t (\(list)) SELECT \(list) FROM json_populate_recordset(NULL::\(name), $1::json) _src\(counting)\(onConflictSQL)"
        // The rows' JSON only when the client asked for them (return=representation); the
        // RETURNING stays either way, so the table's SELECT policy applies as it does for PostgREST.
        let representation = preferences.returning == "representation"
        let inserted =
            counting.isEmpty
            ? "(SELECT count(*) FROM _w)"
            // Read once every row went through: after the aggregate has scanned them all.
            : "(SELECT coalesce(nullif(current_setting('pgrst.inserted', true), '')::int, 0) FROM (SELECT count(*) FROM _w) _all)"
        let sql = """
            WITH _w AS (\(insertSQL) RETURNING \(representation ? "to_json(_t)" : "NULL::json") AS _row)
            SELECT \(inserted)::text, (SELECT count(*) FROM _w)::text,
                   \(representation ? "(SELECT coalesce(json_agg(_row), '[]'::json) FROM _w)::text" : "NULL::text")
            """
        return (sql, columns.isEmpty ? [] : [payload])
    }

    /// PostgREST's `addConfigPgrstInserted`: moves the transaction's `pgrst.inserted` by `step`,
    /// and is true (as a row condition) whatever it becomes.
    static func countInserted(_ step: Int) -> String {
        "set_config('pgrst.inserted', (coalesce(nullif(current_setting('pgrst.inserted', true), '')::int, 0) "
            + (step > 0 ? "+ 1)::text, true) <> '0'" : "- 1)::text, true) <> '-1'")
    }

    // MARK: PATCH

    func update(
        _ request: RESTRequest, table: SchemaCache.Table, role: String, claims: RequestClaims
    ) async throws -> Answer {
        let preferences = Preferences(request.headers["prefer"])
        guard let object = (try? JSONSerialization.jsonObject(with: Data(request.body.utf8))) as? [String: Any] else {
            throw APIError(status: 400, code: "PGRST102", message: "Empty or invalid json")
        }
        for key in object.keys.sorted() where !Grammar.isIdentifier(key) || table.column(key) == nil {
            throw APIError(
                status: 400, code: "PGRST204",
                message: "Could not find the '\(key)' column of '\(table.name)' in the schema cache")
        }
        var builder = SQLBuilder()
        let payload = builder.bind(String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self))
        let condition = try whereClause(request, table: table, builder: &builder)
        let columns = table.columns.map(\.name).filter(object.keys.contains)
        guard !columns.isEmpty else { return Answer(status: 204, headers: [("Content-Range", "*/*")]) }
        let sets = try columns.map { name throws(APIError) in
            let quoted = try SQLBuilder.identifier(name)
            return "\(quoted) = _src.\(quoted)"
        }.joined(separator: ", ")
        let name = try qualifiedName(table)
        let sql = """
            WITH _w AS (UPDATE \(name) AS _t SET \(sets) FROM json_populate_record(NULL::\(name), \(payload)::json) _src
                        WHERE \(condition) RETURNING \(Self.returned(preferences)) AS _row)
            SELECT count(*)::text, coalesce(json_agg(_row), '[]'::json)::text FROM _w
            """
        return try await finishWrite(run(role: role, claims: claims, [(sql, builder.binds)]), preferences: preferences)
    }

    // MARK: DELETE

    func delete(
        _ request: RESTRequest, table: SchemaCache.Table, role: String, claims: RequestClaims
    ) async throws -> Answer {
        let preferences = Preferences(request.headers["prefer"])
        var builder = SQLBuilder()
        let condition = try whereClause(request, table: table, builder: &builder)
        let sql = """
            WITH _w AS (DELETE FROM \(try qualifiedName(table)) AS _t WHERE \(condition) RETURNING \(Self.returned(preferences)) AS _row)
            SELECT count(*)::text, coalesce(json_agg(_row), '[]'::json)::text FROM _w
            """
        return try await finishWrite(run(role: role, claims: claims, [(sql, builder.binds)]), preferences: preferences)
    }

    /// What a write returns of each row: its JSON for `return=representation`, else nothing a
    /// role needs SELECT on every column for (PostgREST's `RETURNING 1`).
    static func returned(_ preferences: Preferences) -> String {
        preferences.returning == "representation" ? "to_json(_t)" : "NULL::json"
    }

    func finishWrite(_ rows: [[String?]], preferences: Preferences) -> Answer {
        let affected = rows.first?[0].flatMap(Int.init) ?? 0
        var headers = [("Content-Range", "*/\(preferences.count != nil ? String(affected) : "*")")]
        if !preferences.applied.isEmpty {
            headers.append(("Preference-Applied", preferences.applied.joined(separator: ", ")))
        }
        if preferences.returning == "representation" {
            return .json(200, rows.first?[1] ?? "[]", headers: headers)
        }
        return Answer(status: 204, headers: headers)
    }
}
