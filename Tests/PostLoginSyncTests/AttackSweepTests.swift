import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SyncModel
import SyncTestSupport
import Testing

/// The standing attack sweep (issue 17, item 4), on the real stack and both schema variants.
///
/// The tables and functions are read from PostgreSQL's catalog, not listed here, so a table or
/// function a later migration adds is swept without anyone remembering to. A second user attacks
/// every one of them with the first user's ids, and the first user's rows are compared, in SQL,
/// before and after: any write that reached them fails the sweep, whatever the route.
@Suite("Standing attack sweep", .serialized)
struct AttackSweepTests {
    /// The victim's world: a desktop that pushed to a phone, a claimed session, a push token.
    struct Victim {
        let world: World
        let database: String
        let user: UUID
        let desktop: UUID
        let phone: UUID
        let sessions: [UUID]
        let repositories: [UUID]
        let token: String
        /// Text that must never appear in anything the attacker reads.
        var secrets: [String] {
            [user.canonical, phone.canonical, token] + sessions.dropFirst().map(\.canonical)
                + repositories.map(\.canonical)
        }
    }

    func victim(deployed: Bool) async throws -> Victim {
        let world = try World(.postgrest, deployedSchema: deployed)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(repositories: 2, sessions: 3)
        _ = try await desktop.engine.push()
        _ = try await phone.engine.pull()
        let sessions = try await desktop.store.ownSessionIDs().sorted { $0.canonical < $1.canonical }
        let token = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        do {
            let coordination: any CoordinationRemote = try world.remote()
            // The deployed variant has no coordination functions: these fail there, harmlessly.
            _ = try? await coordination.registerPushToken(
                PushTokenRegistration(deviceID: phone.identity.id, token: token))
            _ = try? await coordination.claimSessionActivity(
                sessionID: sessions[0], deviceID: phone.identity.id, clientType: .ios)
        }
        return Victim(
            world: world, database: deployed ? "sync_deployed" : "sync_own", user: world.user,
            desktop: desktop.identity.id,
            phone: phone.identity.id, sessions: sessions,
            repositories: try await desktop.store.repositories().map(\.id), token: token)
    }

    /// The exposed tables and their columns, from the catalog.
    func tables(
        _ stack: StackEnvironment, _ database: String
    ) async throws -> [(name: String, columns: [(name: String, type: String)])] {
        let text = try await stack.sql(
            """
            SELECT string_agg(table_name || '=' || columns, ';' ORDER BY table_name) FROM (
                SELECT c.table_name, string_agg(c.column_name || ':' || c.data_type, ',' ORDER BY c.ordinal_position) AS columns
                FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
                WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' GROUP BY c.table_name) x
            """, database: database)
        var result: [(name: String, columns: [(name: String, type: String)])] = []
        for entry in text.split(separator: ";") {
            let parts = entry.split(separator: "=", maxSplits: 1)
            var columns: [(name: String, type: String)] = []
            for column in parts[1].split(separator: ",") {
                let pair = column.split(separator: ":", maxSplits: 1)
                columns.append((String(pair[0]), String(pair[1])))
            }
            result.append((String(parts[0]), columns))
        }
        return result
    }

    /// The SQL condition picking the victim's rows of a table with `columns`: its `user_id`, or
    /// (for tables without one) its sessions' rows; `nil` when the table has neither.
    func scope(_ columns: Set<String>, _ victim: Victim) -> String? {
        if columns.contains("user_id") { return "t.user_id::text = '\(victim.user.canonical)'" }
        if columns.contains("session_id") {
            return
                "t.session_id::text IN (SELECT id::text FROM public.agent_coding_sessions WHERE user_id::text = '\(victim.user.canonical)')"
        }
        return nil
    }

    /// The victim's rows of every table as one digest per table: rows with the victim's
    /// `user_id`, or (for tables without one) rows of the victim's sessions.
    func snapshot(_ stack: StackEnvironment, _ victim: Victim) async throws -> [String: String] {
        var result: [String: String] = [:]
        for table in try await tables(stack, victim.database) {
            guard let scope = scope(Set(table.columns.map(\.name)), victim) else {
                Issue.record("\(table.name) has neither user_id nor session_id: the sweep cannot scope it to a user")
                continue
            }
            result[table.name] = try await stack.sql(
                """
                SELECT count(*) || ':' || md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM public.\(table.name) t WHERE \(scope)
                """, database: victim.database)
        }
        return result
    }

    /// One row of the victim's in `table`, as JSON, with `user_id` (if any) set to the attacker.
    func victimRow(
        _ stack: StackEnvironment, _ victim: Victim, table: String, columns: Set<String>, attacker: UUID
    ) async throws -> String? {
        guard let scope = scope(columns, victim) else { return nil }
        let text = try await stack.sql(
            "SELECT row_to_json(t)::text FROM public.\(table) t WHERE \(scope) LIMIT 1", database: victim.database)
        guard !text.isEmpty, var row = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            return nil
        }
        if columns.contains("user_id") { row["user_id"] = attacker.canonical }
        return String(decoding: try JSONSerialization.data(withJSONObject: row), as: UTF8.self)
    }

    func expectNothingLeaks(_ body: String, _ victim: Victim, _ what: String) {
        for secret in victim.secrets where body.contains(secret) {
            Issue.record("\(what) showed the attacker one of the victim's ids or tokens")
        }
    }

    @Test(
        "every table, read, updated, deleted and written by a second user with the first user's rows: nothing leaks, nothing changes",
        arguments: [false, true])
    func everyTable(deployed: Bool) async throws {
        guard !StackEnvironment.skipped else { return }
        let stack = try StackEnvironment.require()
        let victim = try await victim(deployed: deployed)
        let before = try await snapshot(stack, victim)
        #expect(before.values.contains { !$0.hasPrefix("0:") }, "the victim has rows to attack")
        let attacker = UUID()
        let token = stack.token(for: attacker)
        let base = deployed ? stack.deployedURL : stack.url
        for table in try await tables(stack, victim.database) {
            let names = Set(table.columns.map(\.name))
            let read = try await stack.request("GET", "/rest/v1/\(table.name)?select=*", base: base, token: token)
            #expect(read.status < 500, "GET \(table.name)")
            expectNothingLeaks(read.body, victim, "GET \(table.name)")
            // Every row at once: no filter.
            if let column = table.columns.first(where: { $0.type == "text" || $0.type == "boolean" }) {
                let value = column.type == "text" ? #""pwned""# : "false"
                let patch = try await stack.request(
                    "PATCH", "/rest/v1/\(table.name)", base: base, token: token,
                    headers: ["Prefer": "return=representation"], body: #"{"\#(column.name)":\#(value)}"#)
                #expect(patch.status < 500, "PATCH \(table.name)")
                expectNothingLeaks(patch.body, victim, "PATCH \(table.name)")
            }
            let delete = try await stack.request(
                "DELETE", "/rest/v1/\(table.name)", base: base, token: token,
                headers: ["Prefer": "return=representation"])
            #expect(delete.status < 500, "DELETE \(table.name)")
            expectNothingLeaks(delete.body, victim, "DELETE \(table.name)")
            // The victim's own row, claimed by the attacker: inserted, and upserted over the original.
            if let row = try await victimRow(stack, victim, table: table.name, columns: names, attacker: attacker) {
                let insert = try await stack.request(
                    "POST", "/rest/v1/\(table.name)", base: base, token: token, body: row)
                #expect(insert.status < 500, "POST \(table.name)")
                let upsert = try await stack.request(
                    "POST", "/rest/v1/\(table.name)", base: base, token: token,
                    headers: ["Prefer": "resolution=merge-duplicates,return=representation"], body: "[" + row + "]")
                #expect(upsert.status < 500, "upsert \(table.name)")
                expectNothingLeaks(upsert.body, victim, "upsert \(table.name)")
            }
        }
        let after = try await snapshot(stack, victim)
        for (table, digest) in before {
            #expect(after[table] == digest, "the attacker changed the victim's rows of \(table)")
        }
    }

    /// The functions the API roles may call: the project's own (not an extension's), read from
    /// the catalog, with their argument names.
    func functions(
        _ stack: StackEnvironment, _ database: String
    ) async throws -> [(name: String, arguments: [(name: String, type: String)])] {
        let text = try await stack.sql(
            """
            SELECT coalesce(string_agg(p.proname || '=' || coalesce(array_to_string(
                       ARRAY(SELECT a.n || ':' || format_type(a.t, NULL) FROM unnest(p.proargnames[1:p.pronargs], p.proargtypes::oid[]) AS a(n, t)), ','), ''), ';'), '')
            FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public' AND has_function_privilege('authenticated', p.oid, 'EXECUTE') AND p.prorettype <> 'trigger'::regtype
              AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
            """, database: database)
        var result: [(name: String, arguments: [(name: String, type: String)])] = []
        for entry in text.split(separator: ";") {
            let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            var arguments: [(name: String, type: String)] = []
            if parts.count == 2 {
                for argument in parts[1].split(separator: ",") {
                    let pair = argument.split(separator: ":", maxSplits: 1)
                    arguments.append((String(pair[0]), pair.count > 1 ? String(pair[1]) : ""))
                }
            }
            result.append((String(parts[0]), arguments))
        }
        return result
    }

    /// A PostgREST error body whose code is one the functions raise on purpose.
    static func deliberateRefusal(_ body: String) -> Bool {
        let object = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
        return ["40001", "55000"].contains(object?["code"] as? String ?? "") && object?["message"] is String
    }

    /// The victim's value for an argument, by its name and type.
    func argument(_ name: String, _ type: String, _ victim: Victim) -> Any {
        switch name {
        case let name where name.contains("token"): return victim.token
        case let name where name.contains("session"): return victim.sessions[0].canonical
        case let name where name.contains("repository"): return victim.repositories[0].canonical
        case "owner_device_id": return victim.desktop.canonical
        case let name where name.contains("device"): return victim.phone.canonical
        case "since": return "1970-01-01T00:00:00Z"
        case "client_type", "platform": return "ios"
        case "token_type": return "device"
        case "environment": return "production"
        default:
            switch type {
            case "uuid": return victim.desktop.canonical
            case "integer", "bigint": return 16
            case "boolean": return true
            default: return "x"
            }
        }
    }

    @Test(
        "every function the API roles may call, called by a second user with the first user's ids: nothing leaks, nothing changes",
        arguments: [false, true])
    func everyFunction(deployed: Bool) async throws {
        guard !StackEnvironment.skipped else { return }
        let stack = try StackEnvironment.require()
        let victim = try await victim(deployed: deployed)
        let attacker = UUID()
        let token = stack.token(for: attacker)
        let base = deployed ? stack.deployedURL : stack.url
        let list = try await functions(stack, victim.database)
        // The deployed variant has none left: its only ones, the ownership checks, are not exposed.
        #expect(deployed || !list.isEmpty)
        #expect(!list.contains { $0.name.hasPrefix("not_anothers_") })
        for function in list {
            let before = try await snapshot(stack, victim)
            var body: [String: Any] = [:]
            for (name, type) in function.arguments { body[name] = argument(name, type, victim) }
            let text = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
            let answer = try await stack.request(
                "POST", "/rest/v1/rpc/\(function.name)", base: base, token: token, body: text)
            // PostgREST answers classes 40 and 55 with 500: the trust log's functions refuse with
            // 40001 (not at the head) and 55000 (a state refusal) on purpose. Any other 500 is a
            // server error.
            #expect(answer.status < 500 || Self.deliberateRefusal(answer.body), "rpc \(function.name)")
            expectNothingLeaks(answer.body, victim, "rpc \(function.name)")
            if function.name == "session_secret_digest", answer.status == 200 {
                let buckets =
                    (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [[String: Any]] ?? []
                #expect(
                    buckets.reduce(0) { $0 + (($1["pairs"] as? Int) ?? 0) } == 0,
                    "the digest of the victim's desktop is empty for the attacker")
            }
            let after = try await snapshot(stack, victim)
            for (table, digest) in before where after[table] != digest {
                // A push token belongs to the phone that holds it: registering it moves it to
                // the registrant by design (coordination.md), the one cross-user effect allowed.
                if function.name == "register_push_token" && table == "push_tokens" { continue }
                Issue.record("rpc \(function.name) by another user changed the victim's rows of \(table)")
            }
        }
    }

    @Test(
        "the grammar corpus, sent to every table of the real server: refused or answered, never a server error, and the server keeps serving",
        arguments: [false, true])
    func grammarCorpus(deployed: Bool) async throws {
        guard !StackEnvironment.skipped else { return }
        let stack = try StackEnvironment.require()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let directory = root.appendingPathComponent("fuzz/corpus/postgrest-query")
        let queries = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .map { String(decoding: try Data(contentsOf: $0), as: UTF8.self) }
        let user = UUID()
        let base = deployed ? stack.deployedURL : stack.url
        for table in ["agent_coding_sessions", "devices", "agent_coding_session_secrets"] {
            for query in queries {
                // Sent as the fuzzer saw it when that is a valid URL, percent-encoded otherwise.
                let path = "/rest/v1/\(table)?" + query
                let sent =
                    URL(string: base.absoluteString + path) != nil
                    ? path
                    : "/rest/v1/\(table)?" + (query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
                let answer = try await stack.request("GET", sent, base: base, token: stack.token(for: user))
                #expect(answer.status < 500, "a query on \(table) got \(answer.status)")
            }
        }
        let health = try await stack.request(
            "GET", "/rest/v1/devices?select=id&limit=1", base: base, token: stack.token(for: user))
        #expect(health.status == 200)
    }
}
