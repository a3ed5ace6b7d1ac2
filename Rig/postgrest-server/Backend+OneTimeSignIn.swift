import Foundation
import PostgRESTServerCore
import PostgresNIO
import SecretCrypto

// MARK: - Auth: the sign-ins without a password (GoTrue-compatible subset)

extension Backend {
    /// GoTrue's `amr` method for each kind of one-time token `/verify` spends.
    static let oneTimeSignInMethods = [
        "magiclink": "magiclink", "email": "otp", "recovery": "recovery", "invite": "invite",
        "signup": "email/signup", "email_change": "email_change",
    ]

    /// `POST /auth/v1/admin/generate_link` (the service role only), as GoTrue's: a one-time token
    /// of `type` for the user of `email`, answered instead of mailed (`email_otp`, and
    /// `hashed_token`, the SHA-256 the server keeps). Tests use it to sign in as a mailbox does.
    func generateLink(authorization: String?, type: String, email: String) async throws -> Answer {
        let token = authorization.map { $0.prefix(7).lowercased() == "bearer " ? String($0.dropFirst(7)) : "" } ?? ""
        guard
            let (_, role) = try? JWT.verify(
                token, secret: configuration.jwtSecret, audience: configuration.jwtAudience),
            role == "service_role"
        else {
            return .json(403, #"{"code":403,"error_code":"not_admin","msg":"User not allowed"}"#)
        }
        guard Self.oneTimeSignInMethods[type] != nil else {
            return .json(422, #"{"code":422,"error_code":"validation_failed","msg":"Invalid link type"}"#)
        }
        let digits = SecureBytes(randomCount: 4).withUnsafeBytes { $0.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        let otp = String(format: "%06u", digits % 1_000_000)
        // A new code replaces the user's earlier ones of its type, as GoTrue's does; spent or
        // expired codes go too.
        _ = try await authClient.query(
            """
            DELETE FROM auth.one_time_tokens t USING auth.users u
            WHERE u.email = \(email) AND t.user_id = u.id AND (t.token_type = \(type) OR t.created_at < now() - interval '1 hour')
            """, logger: logger)
        let rows = try await authClient.query(
            """
            INSERT INTO auth.one_time_tokens (user_id, token_hash, token_type)
            SELECT u.id, encode(digest(\(otp), 'sha256'), 'hex'), \(type) FROM auth.users u WHERE u.email = \(email)
            ON CONFLICT (user_id, token_hash) DO UPDATE SET token_type = EXCLUDED.token_type, created_at = now()
            RETURNING token_hash
            """, logger: logger)
        var hashed: String?
        for try await hash in rows.decode(String.self) { hashed = hash }
        guard let hashed else {
            return .json(404, #"{"code":404,"error_code":"user_not_found","msg":"User not found"}"#)
        }
        let object: [String: Any] = [
            "email_otp": otp, "hashed_token": hashed, "verification_type": type, "redirect_to": "",
            "action_link": "http://\(configuration.host):\(configuration.port)/auth/v1/verify?type=\(type)",
        ]
        return .json(
            200,
            String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self))
    }

    /// `POST /auth/v1/verify` `{type, email, token}`: spends a one-time token at most an hour old
    /// and signs the user in, the token's `amr` naming the way in (`magiclink`, `otp`,
    /// `recovery`...), as GoTrue's does.
    func verifyOneTime(type: String, email: String, token: String) async throws -> Answer {
        guard let method = Self.oneTimeSignInMethods[type] else {
            return .json(
                400, #"{"code":400,"error_code":"validation_failed","msg":"Verify requires a verification type"}"#)
        }
        let rows = try await authClient.query(
            """
            DELETE FROM auth.one_time_tokens t USING auth.users u
            WHERE u.email = \(email) AND t.user_id = u.id AND t.token_hash = encode(digest(\(token), 'sha256'), 'hex')
                AND t.token_type = \(type) AND t.created_at > now() - interval '1 hour'
            RETURNING u.id::text, to_char(u.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
            """, logger: logger)
        var found: (String, String)?
        for try await row in rows.decode((String, String).self) { found = row }
        guard let (id, created) = found else {
            return .json(403, #"{"code":403,"error_code":"otp_expired","msg":"Token has expired or is invalid"}"#)
        }
        return .json(200, try await session(user: id, email: email, createdAt: created, method: method))
    }
}
