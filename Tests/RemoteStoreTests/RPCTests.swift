import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

/// PostgREST RPC through the client and the test server, on the stack.
@Suite("RPC on the stack", .enabled(if: !StackEnvironment.skipped))
struct RPCTests {
    static func client(_ stack: StackEnvironment, user: UUID) -> PostgRESTRemoteStore {
        PostgRESTRemoteStore(
            configuration: PostgRESTConfiguration(projectURL: stack.url, apiKey: stack.anonKey, userID: user) { _ in
                stack.token(for: user)
            })
    }

    @Test("scalar, object and set-returning results; named arguments with defaults; the caller's claims apply")
    func results() async throws {
        let stack = try StackEnvironment.require()
        let suffix = UUID().canonical.prefix(8)
        _ = try await stack.sql(
            """
            CREATE FUNCTION public.test_rpc_object_\(suffix)(a int, b text DEFAULT 'default', flag boolean DEFAULT false) RETURNS json
                LANGUAGE sql STABLE AS $$ SELECT json_build_object('a', a, 'b', b, 'flag', flag, 'uid', auth.uid()) $$;
            CREATE FUNCTION public.test_rpc_set_\(suffix)(n int) RETURNS SETOF int LANGUAGE sql STABLE AS $$ SELECT generate_series(1, n) $$;
            CREATE FUNCTION public.test_rpc_void_\(suffix)() RETURNS void LANGUAGE sql AS $$ SELECT $$;
            """)
        let cleanup = """
            DROP FUNCTION public.test_rpc_object_\(suffix)(int, text, boolean); DROP FUNCTION public.test_rpc_set_\(suffix)(int);
            DROP FUNCTION public.test_rpc_void_\(suffix)();
            """
        try await stack.afterwards(run: cleanup) {
            let user = UUID()
            let client = Self.client(stack, user: user)
            let scalar = try await client.rpc(
                "is_valid_x25519_public_key", arguments: ["key": .string(X25519PrivateKey().publicKey.base64)])
            #expect(String(decoding: scalar, as: UTF8.self) == "true")
            let object = try await client.rpc(
                "test_rpc_object_\(suffix)", arguments: ["a": .int(7), "flag": .bool(true)])
            let decoded = try #require(try JSONSerialization.jsonObject(with: object) as? [String: Any])
            #expect(
                decoded["a"] as? Int == 7 && decoded["b"] as? String == "default" && decoded["flag"] as? Bool == true)
            #expect(decoded["uid"] as? String == user.canonical)
            let set = try await client.rpc("test_rpc_set_\(suffix)", arguments: ["n": .int(3)])
            #expect(try JSONSerialization.jsonObject(with: set) as? [Int] == [1, 2, 3])
            #expect(try await client.rpc("test_rpc_void_\(suffix)", arguments: [:]).isEmpty)
            // GET works for a stable function.
            let get = try await stack.request(
                "GET", "/rest/v1/rpc/test_rpc_set_\(suffix)?n=2", token: stack.token(for: user))
            let values = try JSONSerialization.jsonObject(with: Data(get.body.utf8)) as? [Int]
            #expect(get.status == 200 && values == [1, 2])
        }
    }

    @Test("a missing function, or one called with other argument names, is 404 PGRST202")
    func missing() async throws {
        let stack = try StackEnvironment.require()
        let client = Self.client(stack, user: UUID())
        await #expect { _ = try await client.rpc("no_such_function", arguments: [:]) } throws: {
            ($0 as? RemoteStoreError)?.code == .missingFunction && ($0 as? RemoteStoreError)?.status == 404
        }
        await #expect {
            _ = try await client.rpc("is_valid_x25519_public_key", arguments: ["not_key": .string("x")])
        } throws: {
            ($0 as? RemoteStoreError)?.code == .missingFunction
        }
        let token = stack.token(for: UUID())
        for path in ["/rest/v1/rpc/is_valid_x25519_public_key%22()--", "/rest/v1/rpc/pg_sleep"] {
            let r = try await stack.request("POST", path, token: token, body: #"{"seconds":1}"#)
            #expect(r.status == 404 && r.body.contains("PGRST202"), "\(path): \(r.status)")
        }
        let badKey = try await stack.request(
            "POST", "/rest/v1/rpc/is_valid_x25519_public_key", token: token, body: #"{"key\")--":"x"}"#)
        #expect(badKey.status == 404)
        let badJWT = try await stack.request(
            "POST", "/rest/v1/rpc/is_valid_x25519_public_key", token: "not-a-jwt", body: #"{"key":"x"}"#)
        #expect(badJWT.status == 401)
    }
}
