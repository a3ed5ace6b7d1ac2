import ConformanceVectors
import Foundation
import PostgRESTServerCore
import RemoteStore
import SecretCrypto

// The parsers of what servers and files hand the engine and the test server: PostgREST
// responses, vector files, the test server's query grammar and its JWTs.
extension FuzzTarget {
    // MARK: - PostgREST responses

    static func postgrestResponse(_ data: [UInt8]) -> FuzzOutcome {
        guard let first = data.first else { return .rejected }
        let shapes = PostgRESTRemoteStore.ResponseShape.allCases
        let shape = shapes[Int(first) % shapes.count]
        do {
            _ = try PostgRESTRemoteStore.decode(shape, body: Data(data.dropFirst()))
            return .accepted
        } catch {
            guard error is RemoteStoreError else {
                violated(.postgrestResponse, "\(shape.rawValue) threw \(type(of: error))")
            }
            return .rejected
        }
    }

    // MARK: - Vector files

    static func vectorFile(_ data: [UInt8]) -> FuzzOutcome {
        do {
            _ = try VectorVerifier.verify(data: Data(data), path: "fuzz.json")
            return .accepted
        } catch {
            guard error is VectorFileError else { violated(.vectorFile, "verify threw \(type(of: error))") }
            return .rejected
        }
    }

    // MARK: - The test server's grammar

    /// A table shaped like `agent_coding_sessions`, the one every filter kind applies to.
    static let table = SchemaTable(
        name: "agent_coding_sessions",
        columns: [
            .init(name: "id", type: "uuid"), .init(name: "user_id", type: "uuid"), .init(name: "title", type: "text"),
            .init(name: "session_pid", type: "integer"), .init(name: "is_worktree", type: "boolean"),
            .init(name: "updated_at", type: "timestamp with time zone"), .init(name: "runtime_status", type: "jsonb"),
        ], primaryKey: ["id"])

    /// Everything SQL text built from a request may contain besides quoted identifiers: the
    /// builder's keywords, `$n` placeholders, casts to the schema's type names. A byte outside
    /// this set in the SQL (quoted identifiers aside) means request text reached the SQL.
    static let sqlAlphabet = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ .$()=<>:,".utf8)

    /// Checks SQL text: outside `"..."` identifiers (whose `"` must be doubled), only the
    /// builder's alphabet; inside, only what ``Grammar/isIdentifier(_:)`` admits.
    ///
    /// - Returns: What is wrong, or `nil` when the text is safe.
    public static func sqlProblem(_ sql: String) -> String? {
        var bytes = Array(sql.utf8)[...]
        while let byte = bytes.popFirst() {
            if byte == 0x22 {
                var name: [UInt8] = []
                var closed = false
                while let next = bytes.popFirst() {
                    if next == 0x22 {
                        if bytes.first == 0x22 {
                            bytes.removeFirst()
                            name.append(0x22)
                            continue
                        }
                        closed = true
                        break
                    }
                    name.append(next)
                }
                guard closed, Grammar.isIdentifier(String(decoding: name, as: UTF8.self)) else {
                    return "a quoted identifier in the SQL is not one a request may name"
                }
            } else if !sqlAlphabet.contains(byte) {
                return "request text reached the SQL outside a bind parameter"
            }
        }
        return nil
    }

    static func checkSQL(_ sql: String) {
        if let problem = sqlProblem(sql) { violated(.postgrestQuery, problem) }
    }

    static func postgrestQuery(_ text: String) -> FuzzOutcome {
        var builder = SQLBuilder()
        var accepted = true
        for (name, value) in Grammar.decodeQuery(text) {
            do {
                switch name {
                case "select":
                    for item in try Grammar.select(value) where item.column != "*" {
                        guard Grammar.isIdentifier(item.column), item.alias.map(Grammar.isIdentifier) ?? true,
                            item.castSQL.map({ Grammar.casts.values.contains($0) }) ?? true
                        else {
                            violated(.postgrestQuery, "select accepted a name or cast outside its allow-list")
                        }
                        if let column = table.column(item.column) { checkSQL(try SQLBuilder.identifier(column.name)) }
                    }
                case "order":
                    for term in try Grammar.order(value) {
                        guard Grammar.isIdentifier(term.column),
                            term.nulls == nil || term.nulls == "FIRST" || term.nulls == "LAST"
                        else {
                            violated(.postgrestQuery, "order accepted a term outside its grammar")
                        }
                    }
                case "on_conflict":
                    for target in Grammar.onConflict(value) where Grammar.isIdentifier(target) {
                        if let column = table.column(target) { checkSQL(try SQLBuilder.identifier(column.name)) }
                    }
                case "columns":
                    _ = Grammar.columns(value).filter(Grammar.isIdentifier)
                case "limit", "offset":
                    _ = Int(value)
                default:
                    let condition = try Grammar.topLevel(column: name, value)
                    let sql = try builder.condition(condition, table: table)
                    checkSQL(sql)
                }
            } catch {
                guard error is APIError else { violated(.postgrestQuery, "the grammar threw \(type(of: error))") }
                accepted = false
            }
        }
        return accepted ? .accepted : .rejected
    }

    /// The test server's JWT secret in the fuzz target: a fixed test value, not a real one.
    static let jwtSecret = SecureBytes(copying: Array("fuzz-target-jwt-secret-of-32-bytes-or-more".utf8))

    static func jwt(_ data: [UInt8]) -> FuzzOutcome {
        guard let mode = data.first else { return .rejected }
        let rest = Array(data.dropFirst())
        let token: String
        if mode & 1 == 1 {
            token = String(decoding: rest, as: UTF8.self)
        } else {
            let input = JWT.base64URL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) + "." + JWT.base64URL(rest)
            token = input + "." + JWT.base64URL(HMACSHA256.authenticationCode(for: Array(input.utf8), using: jwtSecret))
        }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        do {
            let (_, role) = try JWT.verify(token, secret: jwtSecret, audience: "authenticated", now: now)
            // A claims set this target signed: what was accepted must satisfy the rules as read
            // by an independent JSON parser.
            if mode & 1 == 0 {
                let claims = (try? JSONSerialization.jsonObject(with: Data(rest))) as? [String: Any]
                guard let exp = (claims?["exp"] as? NSNumber)?.doubleValue, exp > now.timeIntervalSince1970 else {
                    violated(.jwt, "a token without a future exp was accepted")
                }
                if role == "authenticated", (claims?["sub"] as? String).flatMap(UUID.init(uuidString:)) == nil {
                    violated(.jwt, "an authenticated token without a user id was accepted")
                }
            }
            return .accepted
        } catch {
            return .rejected
        }
    }
}
