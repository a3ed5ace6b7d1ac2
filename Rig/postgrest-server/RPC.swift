import Foundation
import Logging
import PostgRESTServerCore
import PostgresNIO

/// The functions of the exposed schema, as PostgREST's schema cache knows them.
struct FunctionCache: Sendable {
    struct Function: Sendable {
        let name: String
        /// Input argument names and types, in order (`format_type`).
        let arguments: [(name: String, type: String)]
        /// How many trailing arguments have defaults.
        let defaults: Int
        let returnsSet: Bool
        let returnType: String
        /// `i`mmutable, `s`table or `v`olatile: GET is allowed for the first two.
        let volatility: String

        /// Whether a call naming exactly `names` fits: every name an argument, every argument
        /// without a default named.
        func accepts(_ names: Set<String>) -> Bool {
            let all = Set(arguments.map(\.name))
            let required = Set(arguments.dropLast(defaults).map(\.name))
            return names.isSubset(of: all) && required.isSubset(of: names)
        }
    }

    let functions: [String: [Function]]

    static func load(client: PostgresClient, schema: String, logger: Logger) async throws -> FunctionCache {
        let rows = try await client.query(
            """
            SELECT p.proname, coalesce(array_to_string(p.proargnames[1:p.pronargs], ','), ''),
                   coalesce((SELECT string_agg(format_type(t, NULL), ',' ORDER BY i) FROM unnest(p.proargtypes) WITH ORDINALITY AS a(t, i)), ''),
                   p.pronargdefaults::int, p.proretset, format_type(p.prorettype, NULL), p.provolatile::text
            FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = \(schema) AND p.prokind = 'f'
            """, logger: logger)
        var functions: [String: [Function]] = [:]
        for try await (name, names, types, defaults, returnsSet, returnType, volatility) in rows.decode(
            (String, String, String, Int, Bool, String, String).self)
        {
            let argumentNames =
                names.isEmpty ? [] : names.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            let argumentTypes =
                types.isEmpty ? [] : types.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            // Functions with unnamed arguments cannot be called by name (PostgREST skips them too).
            guard argumentNames.count == argumentTypes.count, argumentNames.allSatisfy(Grammar.isIdentifier) else {
                continue
            }
            functions[name, default: []].append(
                Function(
                    name: name, arguments: Array(zip(argumentNames, argumentTypes)).map { ($0.0, $0.1) },
                    defaults: defaults,
                    returnsSet: returnsSet, returnType: returnType, volatility: volatility))
        }
        return FunctionCache(functions: functions)
    }
}

extension Backend {
    /// `POST /rest/v1/rpc/<function>` with a JSON object of named arguments (or `GET` with query
    /// parameters for a stable or immutable function), as PostgREST answers it: the result as
    /// JSON (a scalar, an object, or an array for a set-returning function), 204 for `void`,
    /// 404 `PGRST202` when no function of that name takes exactly those argument names.
    ///
    /// The function and its arguments come from the catalogue (the request's names are only
    /// compared against it); every value is a bound parameter cast to the argument's type.
    func call(_ request: RESTRequest, function name: String) async -> Answer {
        do {
            let (role, jwt) = try authenticate(
                authorization: request.headers["authorization"], apiKey: request.headers["apikey"])
            let claims = RequestClaims(jwt: jwt, headers: request.headers)
            var arguments: [String: String?] = [:]
            // Arguments given as JSON arrays: an array-typed parameter takes their elements, as
            // PostgREST's json_to_record does.
            var arrays = Set<String>()
            if request.method == "POST" {
                let text = request.body.trimmingCharacters(in: .whitespacesAndNewlines)
                if !text.isEmpty {
                    guard
                        case let .object(members)? = try? JSONDecoder().decode(JSONArgument.self, from: Data(text.utf8))
                    else {
                        throw APIError(status: 400, code: "PGRST102", message: "Empty or invalid json")
                    }
                    for (key, value) in members {
                        arguments[key] = value.sqlText
                        if case .array = value { arrays.insert(key) }
                    }
                }
            } else if request.method == "GET" {
                for (key, value) in request.query where !Grammar.reservedParameters.contains(key) {
                    arguments[key] = value
                }
            } else {
                throw APIError(status: 405, code: "PGRST117", message: "Unsupported HTTP method: \(request.method)")
            }
            guard Grammar.isIdentifier(name), arguments.keys.allSatisfy(Grammar.isIdentifier) else {
                throw notFound(name, arguments.keys)
            }
            var candidates = try await functions().functions[name] ?? []
            if !candidates.contains(where: { $0.accepts(Set(arguments.keys)) }) {
                // A function created after start-up: look again once, as PostgREST does on a schema reload.
                candidates = try await functions(reload: true).functions[name] ?? []
            }
            guard let function = candidates.first(where: { $0.accepts(Set(arguments.keys)) }) else {
                throw notFound(name, arguments.keys)
            }
            if request.method == "GET" && function.volatility == "v" {
                throw APIError(
                    status: 405, code: "PGRST101", message: "Cannot use the GET method on RPC with volatile functions")
            }
            var builder = SQLBuilder()
            let named = try function.arguments.filter { arguments.keys.contains($0.name) }.map { argument in
                let value = builder.bind(arguments[argument.name] ?? nil)
                let expression =
                    argument.type.hasSuffix("[]") && arrays.contains(argument.name)
                    ? "ARRAY(SELECT jsonb_array_elements_text(\(value)::jsonb))::\(argument.type)"
                    : "\(value)::\(argument.type)"
                return "\(try SQLBuilder.identifier(argument.name)) => \(expression)"
            }.joined(separator: ", ")
            let call =
                "\(try SQLBuilder.identifier(configuration.schema)).\(try SQLBuilder.identifier(function.name))(\(named))"
            let sql: String
            if function.returnsSet {
                sql = "SELECT coalesce(json_agg(_r), '[]'::json)::text FROM \(call) AS _r"
            } else if function.returnType == "void" {
                sql = "SELECT \(call)::text"
            } else {
                sql = "SELECT to_json(\(call))::text"
            }
            let rows = try await run(role: role, claims: claims, [(sql, builder.binds)])
            if function.returnType == "void" { return Answer(status: 204) }
            return .json(200, rows.first?[0] ?? "null")
        } catch let error as APIError {
            return .error(error)
        } catch {
            return .error(APIError(status: 500, code: "PGRST000", message: "internal error"))
        }
    }

    func notFound(_ name: String, _ keys: Dictionary<String, String?>.Keys) -> APIError {
        APIError(
            status: 404, code: "PGRST202",
            message:
                "Could not find the function \(configuration.schema).\(name)(\(keys.sorted().joined(separator: ", "))) in the schema cache",
            hint: "Perhaps you meant to call another function, or the arguments are named differently.")
    }

}

/// A JSON value with its types kept (a boolean is not a number), for RPC arguments.
indirect enum JSONArgument: Decodable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONArgument])
    case object([String: JSONArgument])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .number(String(value))
        } else if let value = try? container.decode(Double.self) {
            self = .number(String(value))
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONArgument].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONArgument].self))
        }
    }

    /// The text PostgreSQL casts: strings as they are, numbers and booleans in their JSON
    /// spelling, arrays and objects as JSON text, null as SQL NULL.
    var sqlText: String? {
        switch self {
        case .null: nil
        case let .string(text): text
        default: json
        }
    }

    var json: String {
        switch self {
        case .null: "null"
        case let .bool(value): value ? "true" : "false"
        case let .number(text): text
        case let .string(text):
            String(
                decoding: (try? JSONSerialization.data(withJSONObject: [text], options: [])) ?? Data(), as: UTF8.self
            ).dropFirst().dropLast().description
        case let .array(items): "[" + items.map(\.json).joined(separator: ",") + "]"
        case let .object(members):
            "{"
                + members.keys.sorted().map { key in JSONArgument.string(key).json + ":" + members[key]!.json }.joined(
                    separator: ",") + "}"
        }
    }
}
