import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

/// Row-level security on the legacy device-trust tables (docs/trust.md), on the stack's two
/// schema variants: since the trust log they are read-only for every API role, another user reads
/// nothing, a revocation can be neither updated nor deleted, and anon has no access at all.
@Suite("Device-trust tables: row-level security", .enabled(if: !StackEnvironment.skipped))
struct TrustTablesSecurityTests {
    static func base(_ deployed: Bool) throws -> URL {
        let stack = try StackEnvironment.require()
        return deployed ? stack.deployedURL : stack.url
    }

    /// A user with a device row, an identity key, a certificate, a revocation and a pairing request.
    static func victim(_ deployed: Bool) async throws -> (user: UUID, device: UUID, credential: DeviceCredential) {
        let stack = try StackEnvironment.require()
        let user = UUID(), device = UUID()
        let token = stack.token(for: user)
        let base = try base(deployed)
        let credential = try await stack.registeredCredential(for: device, user: user, base: base)
        let key = X25519PrivateKey().publicKey.base64
        var r = try await stack.request(
            "POST", "/rest/v1/devices", base: base, token: token, headers: credential.headers,
            body:
                #"[{"id":"\#(device.canonical)","user_id":"\#(user.canonical)","name":"v","device_type":"ios-phone","public_key":"\#(key)"}]"#
        )
        #expect(r.status == 201, "\(r.body)")
        // Since the trust log no API role writes the legacy tables: the owner's own inserts are
        // refused, and the rows an older version wrote are staged by the operator.
        r = try await stack.request(
            "POST", "/rest/v1/user_identity_keys", base: base, token: token, headers: credential.headers,
            body: #"{"user_id":"\#(user.canonical)","public_key":"\#(Ed25519PrivateKey().publicKey.base64)"}"#)
        #expect(r.status == 403, "\(r.body)")
        for table in ["device_certificates", "device_revocations"] {
            r = try await stack.request(
                "POST", "/rest/v1/\(table)", base: base, token: token, headers: credential.headers,
                body:
                    #"{"device_id":"\#(device.canonical)","user_id":"\#(user.canonical)","body":"AA==","signature":"AA=="}"#
            )
            #expect(r.status == 403, "\(table): \(r.body)")
        }
        let database = deployed ? "sync_deployed" : "sync_own"
        _ = try await stack.sql(
            """
            INSERT INTO public.user_identity_keys (user_id, public_key)
                VALUES ('\(user.canonical)', '\(Ed25519PrivateKey().publicKey.base64)');
            INSERT INTO public.device_certificates (device_id, user_id, body, signature)
                VALUES ('\(device.canonical)', '\(user.canonical)', 'AA==', 'AA==');
            INSERT INTO public.device_revocations (device_id, user_id, body, signature)
                VALUES ('\(device.canonical)', '\(user.canonical)', 'AA==', 'AA==');
            """, database: database)
        r = try await stack.request(
            "POST", "/rest/v1/pairing_requests", base: base, token: token, headers: credential.headers,
            body:
                #"{"user_id":"\#(user.canonical)","invite_id":"0011223344556677","device_id":"\#(device.canonical)","x25519_public_key":"\#(key)","ed25519_public_key":"AA==","mac":"AA=="}"#
        )
        #expect(r.status == 201, "\(r.body)")
        return (user, device, credential)
    }

    static let tables = ["user_identity_keys", "device_certificates", "device_revocations", "pairing_requests"]

    @Test(
        "another user reads none of these rows and cannot write rows naming the victim or the victim's device",
        arguments: [false, true])
    func otherUser(deployed: Bool) async throws {
        let stack = try StackEnvironment.require()
        let base = try Self.base(deployed)
        let (user, device, credential) = try await Self.victim(deployed)
        let attacker = UUID()
        let token = stack.token(for: attacker)
        for table in Self.tables {
            let r = try await stack.request("GET", "/rest/v1/\(table)?select=*", base: base, token: token)
            #expect(r.status == 200 && r.body == "[]", "\(table): \(r.body)")
        }
        // Rows claiming the victim's user id, or the attacker's user id on the victim's device.
        let attempts: [(String, String)] = [
            ("user_identity_keys", #"{"user_id":"\#(user.canonical)","public_key":"AA=="}"#),
            (
                "device_certificates",
                #"{"device_id":"\#(device.canonical)","user_id":"\#(attacker.canonical)","body":"AA==","signature":"AA=="}"#
            ),
            (
                "device_revocations",
                #"{"device_id":"\#(device.canonical)","user_id":"\#(attacker.canonical)","body":"AA==","signature":"AA=="}"#
            ),
            (
                "pairing_requests",
                #"{"user_id":"\#(attacker.canonical)","invite_id":"00","device_id":"\#(device.canonical)","x25519_public_key":"AA==","ed25519_public_key":"AA==","mac":"AA=="}"#
            ),
            (
                "pairing_requests",
                #"{"user_id":"\#(user.canonical)","invite_id":"00","device_id":"\#(UUID().canonical)","x25519_public_key":"AA==","ed25519_public_key":"AA==","mac":"AA=="}"#
            ),
        ]
        for (table, body) in attempts {
            let r = try await stack.request("POST", "/rest/v1/\(table)", base: base, token: token, body: body)
            #expect([403, 409].contains(r.status), "\(table): \(r.status) \(r.body)")
        }
        // Updates and deletes by the attacker touch nothing.
        for table in Self.tables {
            let column = table == "user_identity_keys" || table == "pairing_requests" ? "user_id" : "device_id"
            let value = column == "user_id" ? user.canonical : device.canonical
            _ = try await stack.request("DELETE", "/rest/v1/\(table)?\(column)=eq.\(value)", base: base, token: token)
        }
        let owner = stack.token(for: user)
        for table in Self.tables {
            let r = try await stack.request(
                "GET", "/rest/v1/\(table)?select=user_id", base: base, token: owner, credential: credential)
            #expect(r.body.contains(user.canonical), "\(table) lost the victim's row: \(r.body)")
        }
    }

    @Test(
        "the owner cannot replace or delete the identity key, nor delete a revocation; anon reaches nothing",
        arguments: [false, true])
    func ownerLimits(deployed: Bool) async throws {
        let stack = try StackEnvironment.require()
        let base = try Self.base(deployed)
        let (user, device, credential) = try await Self.victim(deployed)
        let token = stack.token(for: user)
        let before = try await stack.request(
            "GET", "/rest/v1/user_identity_keys?select=public_key", base: base, token: token, credential: credential
        ).body
        let second = try await stack.request(
            "POST", "/rest/v1/user_identity_keys", base: base, token: token, headers: credential.headers,
            body: #"{"user_id":"\#(user.canonical)","public_key":"BB=="}"#)
        #expect(second.status == 409 || second.status == 403, "\(second.status)")
        let upsert = try await stack.request(
            "POST", "/rest/v1/user_identity_keys?on_conflict=user_id", base: base, token: token,
            headers: credential.headers.merging(["Prefer": "resolution=merge-duplicates"]) { a, _ in a },
            body: #"[{"user_id":"\#(user.canonical)","public_key":"BB=="}]"#)
        #expect(upsert.status >= 400, "upsert: \(upsert.status)")
        let patch = try await stack.request(
            "PATCH", "/rest/v1/user_identity_keys?user_id=eq.\(user.canonical)", base: base, token: token,
            headers: credential.headers,
            body: #"{"public_key":"BB=="}"#)
        #expect(patch.status >= 400, "patch: \(patch.status)")
        let delete = try await stack.request(
            "DELETE", "/rest/v1/user_identity_keys?user_id=eq.\(user.canonical)", base: base, token: token,
            credential: credential)
        #expect(delete.status >= 400, "delete: \(delete.status)")
        #expect(
            try await stack.request(
                "GET", "/rest/v1/user_identity_keys?select=public_key", base: base, token: token, credential: credential
            )
            .body == before)

        let revocationUpdate = try await stack.request(
            "PATCH", "/rest/v1/device_revocations?device_id=eq.\(device.canonical)", base: base, token: token,
            headers: credential.headers,
            body: #"{"body":"BB=="}"#)
        #expect(revocationUpdate.status >= 400, "revocation update: \(revocationUpdate.status)")
        let revocationDelete = try await stack.request(
            "DELETE", "/rest/v1/device_revocations?device_id=eq.\(device.canonical)", base: base, token: token,
            credential: credential)
        #expect(revocationDelete.status >= 400, "revocation delete: \(revocationDelete.status)")
        #expect(
            try await stack.request(
                "GET", "/rest/v1/device_revocations?select=device_id", base: base, token: token, credential: credential
            )
            .body.contains(device.canonical))

        for table in Self.tables {
            let r = try await stack.request("GET", "/rest/v1/\(table)?select=*", base: base)
            #expect(r.status >= 400 || r.body == "[]", "anon on \(table): \(r.status) \(r.body)")
        }
    }
}
