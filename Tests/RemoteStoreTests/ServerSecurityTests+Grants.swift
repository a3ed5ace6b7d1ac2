import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import TestStack
import Testing

extension ServerSecurityTests {
    // MARK: The grants a Supabase project starts from (`*_device_scoped_rows.sql`)

    @Test(
        "a device reads no other device's APNs token, in the table, the feeds or the outbox", arguments: [false, true])
    func apnsTokenNotReadable(deployed: Bool) async throws {
        let stack = try StackEnvironment.require()
        let base = deployed ? stack.deployedURL : stack.url
        let user = UUID()
        let token = SecureBytes(randomCount: 32).withUnsafeBytes { ByteEncoding.hex($0) }
        let phone = UUID()
        let phoneCredential = try await stack.registeredCredential(for: phone, user: user, base: base)
        let row =
            #"[{"id":"\#(phone.canonical)","user_id":"\#(user.canonical)","name":"phone","device_type":"ios-phone","apns_token":"\#(token)","apns_environment":"sandbox","push_enabled":true}]"#
        let written = try await stack.request(
            "POST", "/rest/v1/devices", base: base, token: stack.token(for: user), body: row,
            credential: phoneCredential)
        #expect(written.status == 201, "\(written.status) \(written.body)")
        let other = UUID()
        let credential = try await stack.registeredCredential(for: other, user: user, base: base)
        let otherRow =
            #"[{"id":"\#(other.canonical)","user_id":"\#(user.canonical)","name":"other","device_type":"ios-phone"}]"#
        let otherWritten = try await stack.request(
            "POST", "/rest/v1/devices", base: base, token: stack.token(for: user), body: otherRow,
            credential: credential)
        #expect(otherWritten.status == 201)
        for select in ["apns_token", "*", "id,apns_token"] {
            let r = try await stack.request(
                "GET", "/rest/v1/devices?select=\(select)", base: base, token: stack.token(for: user),
                credential: credential)
            #expect(r.status == 401 || r.status == 403, "select=\(select): \(r.status)")
            #expect(!r.body.contains(token))
        }
        let listed = try await stack.request(
            "GET", "/rest/v1/devices?select=id,name", base: base, token: stack.token(for: user), credential: credential)
        #expect(listed.status == 200 && listed.body.contains(phone.canonical))
        // The operator's push path still reads it.
        let operatorRead = try await stack.request(
            "GET", "/rest/v1/devices?select=apns_token&id=eq.\(phone.canonical)", base: base, token: stack.serviceKey,
            apiKey: .some(stack.serviceKey))
        #expect(operatorRead.body.contains(token))
        guard !deployed else { return }
        for (function, body) in [
            ("sync_changes", "{}"), ("sync_pull_changes", #"{"device_id":"\#(other.canonical)"}"#),
        ] {
            let r = try await stack.request(
                "POST", "/rest/v1/rpc/\(function)", base: base, token: stack.token(for: user), body: body,
                credential: credential)
            #expect(
                r.status == 200 && r.body.contains(phone.canonical), "\(function): \(r.status) \(r.body.prefix(300))")
            #expect(!r.body.contains(token) && !r.body.contains("apns_token\""), "\(function) returns the token")
        }
        // The outbox carries tokens too (the push worker's): a device reads only their last six characters.
        for select in ["token", "*", "id,token"] {
            let r = try await stack.request(
                "GET", "/rest/v1/push_outbox?select=\(select)", base: base, token: stack.token(for: user),
                credential: credential)
            #expect(r.status == 401 || r.status == 403, "push_outbox select=\(select): \(r.status)")
        }
        let hints = try await stack.request(
            "GET", "/rest/v1/push_outbox?select=id,token_hint", base: base, token: stack.token(for: user),
            credential: credential)
        #expect(hints.status == 200, "\(hints.status) \(hints.body)")
    }

    @Test(
        "anon can do nothing in public; operator functions and trust columns are not a signed-in user's",
        arguments: [false, true])
    func supabaseDefaultGrantsNarrowed(deployed: Bool) async throws {
        let stack = try StackEnvironment.require()
        let database = deployed ? "sync_deployed" : "sync_own"
        let anon = try await stack.sql(
            """
            SELECT string_agg(c.relname, ',') FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v', 'm', 'p', 'S')
              AND (has_table_privilege('anon', c.oid, 'SELECT,INSERT,UPDATE,DELETE')
                   OR (c.relkind = 'S' AND has_sequence_privilege('anon', c.oid, 'USAGE')))
            """, database: database)
        #expect(anon.isEmpty, "anon may use \(anon)")
        let functions = try await stack.sql(
            """
            SELECT string_agg(p.proname, ',') FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname IN ('public', 'private') AND p.prosecdef AND p.prorettype <> 'trigger'::regtype AND p.proname NOT LIKE 'test\\_%'
              AND has_function_privilege('anon', p.oid, 'EXECUTE')
            """, database: database)
        // A function that runs as its owner (past every policy) is not anon's to call; the
        // others (validators, trigger functions, pgcrypto) run as the caller, under the grants.
        #expect(functions.isEmpty, "anon may call \(functions)")
        let columns = try await stack.sql(
            """
            SELECT concat_ws(',',
                CASE WHEN has_column_privilege('authenticated', 'public.devices', 'is_trusted', 'UPDATE') THEN 'is_trusted' END,
                CASE WHEN has_column_privilege('authenticated', 'public.devices', 'device_role', 'INSERT') THEN 'device_role' END,
                CASE WHEN has_column_privilege('authenticated', 'public.session_secret_requests', 'user_id', 'UPDATE') THEN 'user_id' END,
                CASE WHEN has_table_privilege('authenticated', 'public.pairing_requests', 'UPDATE') THEN 'pairing_requests' END)
            """, database: database)
        #expect(columns.isEmpty, "authenticated may write \(columns)")
        guard !deployed else { return }
        let operatorOnly = try await stack.sql(
            """
            SELECT concat_ws(',',
                CASE WHEN has_function_privilege('authenticated', 'public.expire_approvals()', 'EXECUTE') THEN 'expire_approvals' END,
                CASE WHEN has_function_privilege('authenticated', 'public.session_secret_digest_apply()', 'EXECUTE') THEN 'session_secret_digest_apply' END,
                CASE WHEN has_function_privilege('authenticated', 'public.notification_report(integer)', 'EXECUTE') THEN 'notification_report' END)
            """)
        #expect(operatorOnly.isEmpty, "authenticated may call \(operatorOnly)")
        // A session holder's push token (its live activity's) is not another device's to read.
        let holderToken = try await stack.sql(
            "SELECT has_column_privilege('authenticated', 'public.session_active_clients', 'push_token', 'SELECT')")
        #expect(holderToken == "f")
        let outboxToken = try await stack.sql(
            "SELECT has_column_privilege('authenticated', 'public.push_outbox', 'token', 'SELECT')")
        #expect(outboxToken == "f")
    }

    @Test(
        "a secret request is deleted only by the device that asked or the session's desktop", arguments: [false, true])
    func secretRequestDeletes(deployed: Bool) async throws {
        let stack = try StackEnvironment.require()
        let base = deployed ? stack.deployedURL : stack.url
        let user = UUID()
        let (desktop, phone, stranger) = (UUID(), UUID(), UUID())
        var credentials: [UUID: DeviceCredential] = [:]
        for device in [desktop, phone, stranger] {
            credentials[device] = try await stack.registeredCredential(for: device, user: user, base: base)
            let row =
                #"[{"id":"\#(device.canonical)","user_id":"\#(user.canonical)","name":"d","device_type":"linux-desktop"}]"#
            let r = try await stack.request(
                "POST", "/rest/v1/devices", base: base, token: stack.token(for: user), body: row,
                credential: credentials[device])
            #expect(r.status == 201, "\(r.status) \(r.body)")
        }
        let repository = UUID()
        let session = UUID()
        for (table, row) in [
            (
                "repositories",
                #"[{"id":"\#(repository.canonical)","user_id":"\#(user.canonical)","device_id":"\#(desktop.canonical)","name":"r","local_path":"/r"}]"#
            ),
            (
                "agent_coding_sessions",
                #"[{"id":"\#(session.canonical)","user_id":"\#(user.canonical)","device_id":"\#(desktop.canonical)","repository_id":"\#(repository.canonical)"}]"#
            ),
        ] {
            let r = try await stack.request(
                "POST", "/rest/v1/\(table)", base: base, token: stack.token(for: user), body: row,
                credential: credentials[desktop])
            #expect(r.status == 201, "\(table): \(r.status) \(r.body)")
        }
        func ask() async throws -> UUID {
            let id = UUID()
            let row =
                #"[{"id":"\#(id.canonical)","user_id":"\#(user.canonical)","session_id":"\#(session.canonical)","requester_device_id":"\#(phone.canonical)"}]"#
            let r = try await stack.request(
                "POST", "/rest/v1/session_secret_requests", base: base, token: stack.token(for: user), body: row,
                credential: credentials[phone])
            #expect(r.status == 201, "\(r.status) \(r.body)")
            return id
        }
        func delete(_ id: UUID, as device: UUID) async throws -> Bool {
            _ = try await stack.request(
                "DELETE", "/rest/v1/session_secret_requests?id=eq.\(id.canonical)", base: base,
                token: stack.token(for: user), credential: credentials[device])
            let left = try await stack.sql(
                "SELECT count(*) FROM public.session_secret_requests WHERE id = '\(id.canonical)'",
                database: deployed ? "sync_deployed" : "sync_own")
            return left == "0"
        }
        let first = try await ask()
        #expect(try await !delete(first, as: stranger), "a token holder's device deleted the phone's request")
        #expect(try await delete(first, as: phone))
        let second = try await ask()
        #expect(try await delete(second, as: desktop))
    }
}
