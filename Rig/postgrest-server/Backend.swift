import Foundation
import Logging
import PostgRESTServerCore
import PostgresNIO
import SecretCrypto

/// The server's configuration, from the environment (secrets never come from flags).
struct ServerConfiguration: Sendable {
    var host = "127.0.0.1"
    var port = 25321
    var databaseHost = "127.0.0.1"
    var databasePort = 25329
    var databaseUser = "authenticator"
    /// The role the GoTrue-style `/auth/v1` endpoints connect as; the API roles cannot read
    /// `auth.*` at all.
    var authDatabaseUser = "supabase_auth_admin"
    var databaseName = "postgres"
    var schema = "public"
    /// Supabase's `db-max-rows`.
    var maxRows = 1000
    var jwtExpiry = 3600
    /// The `aud` every token must carry (GoTrue issues `authenticated`).
    var jwtAudience = "authenticated"
    var jwtSecret: SecureBytes
    /// The largest request body accepted; larger ones get 413 before they are held.
    var maxBodyBytes = 4 * 1024 * 1024
    /// The longest a request's query string may be (a gateway's URL limit); longer gets 414.
    var maxQueryBytes = 32 * 1024
    /// Every statement of a request is cancelled after this long (`statement_timeout`).
    var statementTimeoutMilliseconds = 15_000
    /// Seconds a connection may sit without a complete request head (Hummingbird's idle
    /// timeout), and seconds a request's body may take to arrive once its head has.
    var idleTimeoutSeconds: Int64 = 10
    var bodyTimeoutSeconds: Int64 = 15

    static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> ServerConfiguration {
        guard let secret = environment["PGRST_JWT_SECRET"], secret.utf8.count >= 32 else {
            throw APIError(
                status: 500, code: "CONFIG", message: "PGRST_JWT_SECRET must be set to at least 32 characters")
        }
        var configuration = ServerConfiguration(jwtSecret: SecureBytes(copying: Array(secret.utf8)))
        if let value = environment["PGRST_SERVER_HOST"] { configuration.host = value }
        if let value = environment["PGRST_SERVER_PORT"].flatMap(Int.init) { configuration.port = value }
        if let value = environment["PGRST_DB_HOST"] { configuration.databaseHost = value }
        if let value = environment["PGRST_DB_PORT"].flatMap(Int.init) { configuration.databasePort = value }
        if let value = environment["PGRST_DB_USER"] { configuration.databaseUser = value }
        if let value = environment["PGRST_AUTH_DB_USER"] { configuration.authDatabaseUser = value }
        if let value = environment["PGRST_DB_NAME"] { configuration.databaseName = value }
        if let value = environment["PGRST_DB_SCHEMA"] { configuration.schema = value }
        if let value = environment["PGRST_DB_MAX_ROWS"].flatMap(Int.init), value > 0 { configuration.maxRows = value }
        if let value = environment["PGRST_JWT_EXPIRY"].flatMap(Int.init) { configuration.jwtExpiry = value }
        if let value = environment["PGRST_JWT_AUD"], !value.isEmpty { configuration.jwtAudience = value }
        if let value = environment["PGRST_MAX_BODY_BYTES"].flatMap(Int.init), value > 0 {
            configuration.maxBodyBytes = value
        }
        if let value = environment["PGRST_STATEMENT_TIMEOUT_MS"].flatMap(Int.init), value > 0 {
            configuration.statementTimeoutMilliseconds = value
        }
        if let value = environment["PGRST_IDLE_TIMEOUT_S"].flatMap(Int64.init), value > 0 {
            configuration.idleTimeoutSeconds = value
        }
        if let value = environment["PGRST_BODY_TIMEOUT_S"].flatMap(Int64.init), value > 0 {
            configuration.bodyTimeoutSeconds = value
        }
        return configuration
    }

    /// A Supabase-style API key: a long-lived JWT for `role`.
    func apiKey(role: String) -> String {
        JWT.sign(
            ["role": role, "iss": "postgrest-server", "aud": jwtAudience, "iat": 1_767_225_600, "exp": 4_102_444_800],
            secret: jwtSecret)
    }
}

/// An HTTP answer before it becomes a Hummingbird response.
struct Answer: Sendable {
    var status: Int
    var headers: [(String, String)] = []
    var body: String? = nil

    static func json(_ status: Int, _ text: String, headers: [(String, String)] = []) -> Answer {
        Answer(status: status, headers: [("Content-Type", "application/json; charset=utf-8")] + headers, body: text)
    }

    static func error(_ error: APIError) -> Answer {
        let object: [String: Any] = [
            "code": error.code, "message": error.message,
            "details": error.details as Any? ?? NSNull(), "hint": error.hint as Any? ?? NSNull(),
        ]
        let text = String(
            decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(),
            as: UTF8.self)
        return .json(error.status, text, headers: error.headers)
    }
}

/// Everything behind the HTTP layer: the PostgreSQL pool, the schema cache, the JWT secret.
actor Backend {
    let client: PostgresClient
    /// The pool the `/auth/v1` endpoints use, connected as ``ServerConfiguration/authDatabaseUser``.
    let authClient: PostgresClient
    let configuration: ServerConfiguration
    let logger: Logger
    /// The anon and service_role keys: the only `apikey` values accepted.
    nonisolated let knownKeys: [String]
    private var cache: SchemaCache?
    private var functionCache: FunctionCache?

    init(client: PostgresClient, authClient: PostgresClient, configuration: ServerConfiguration, logger: Logger) {
        self.client = client
        self.authClient = authClient
        self.configuration = configuration
        self.logger = logger
        knownKeys = [configuration.apiKey(role: "anon"), configuration.apiKey(role: "service_role")]
    }

    func schema() async throws -> SchemaCache {
        if let cache { return cache }
        let loaded = try await SchemaCache.load(client: client, schema: configuration.schema, logger: logger)
        cache = loaded
        return loaded
    }

    func functions(reload: Bool = false) async throws -> FunctionCache {
        if let functionCache, !reload { return functionCache }
        let loaded = try await FunctionCache.load(client: client, schema: configuration.schema, logger: logger)
        functionCache = loaded
        return loaded
    }

    func table(_ name: String) async throws -> SchemaCache.Table {
        guard Grammar.isIdentifier(name), let table = try await schema().tables[name] else {
            throw APIError(
                status: 404, code: "PGRST205",
                message: "Could not find the table '\(configuration.schema).\(name)' in the schema cache")
        }
        return table
    }

    // MARK: - Authentication

    /// The role and claims JSON for a request.
    ///
    /// As Supabase's gateway does, every request must carry a known `apikey` (the anon or the
    /// service_role key), whether or not it also has a bearer token; the bearer token, when
    /// present, then decides the role, else the apikey does.
    nonisolated func authenticate(authorization: String?, apiKey: String?) throws -> (role: String, claims: String) {
        try requireKnownAPIKey(apiKey)
        let token: String
        if let authorization {
            guard authorization.utf8.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
                throw invalidToken(
                    "JWSError (CompactDecodeError Invalid number of parts: Expected 3 parts; got 1)", code: "PGRST301")
            }
            token = String(authorization.dropFirst(7))
        } else {
            token = apiKey ?? ""
        }
        do {
            let (json, role) = try JWT.verify(
                token, secret: configuration.jwtSecret, audience: configuration.jwtAudience)
            guard ["anon", "authenticated", "service_role"].contains(role) else {
                throw invalidToken("role does not exist", code: "PGRST301")
            }
            return (role, json)
        } catch let failure as JWT.Failure {
            switch failure {
            case .expired: throw invalidToken("JWT expired", code: "PGRST303")
            case let .invalid(message): throw invalidToken(message, code: "PGRST301")
            }
        }
    }

    /// Refuses a request without the anon or service_role key, as Supabase's gateway does.
    nonisolated func requireKnownAPIKey(_ apiKey: String?) throws {
        guard let apiKey, !apiKey.isEmpty else {
            throw APIError(
                status: 401, code: "PGRST000", message: "No API key found in request",
                hint: "No `apikey` request header or url param was found.")
        }
        let given = SecureBytes(copying: Array(apiKey.utf8))
        let known = knownKeys.contains { SecureBytes(copying: Array($0.utf8)) == given }
        guard known else {
            throw APIError(
                status: 401, code: "PGRST000", message: "Invalid API key",
                hint: "Double check your Supabase `anon` or `service_role` API key.")
        }
    }

    nonisolated func invalidToken(_ message: String, code: String) -> APIError {
        APIError(
            status: 401, code: code, message: message,
            headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\", error_description=\"\(message)\"")])
    }

    /// PostgreSQL errors as PostgREST reports them (postgrest.md's table).
    static func translate(_ error: Error, role: String) -> Error {
        if error is APIError { return error }
        guard let error = error as? PSQLError, let info = error.serverInfo, let state = info[.sqlState] else {
            return APIError(
                status: 503, code: "PGRST000", message: "Database connection error. Retrying the connection.")
        }
        // PostgREST's mapping by SQLSTATE and class; anything else is the request's fault, 400
        // (an insert into a generated column, 428C9, is a 400 there too, never a 500).
        let status: Int
        let serverClasses: Set<Substring> = [
            "09", "25", "2D", "38", "39", "3B", "40", "54", "55", "57", "58", "F0", "HV", "XX",
        ]
        switch state {
        case "23505", "23503": status = 409
        case "42501": status = role == "anon" ? 401 : 403
        case "42883", "42P01": status = 404
        case "57014": status = 504
        case "25006": status = 405
        case "21000", "42P17": status = 500
        case _ where state.hasPrefix("08") || state.hasPrefix("53"): status = 503
        case _ where ["0L", "0P", "28"].contains(state.prefix(2)): status = 403
        case _ where serverClasses.contains(state.prefix(2)): status = 500
        default: status = 400
        }
        // A 401 always says how to authenticate, as PostgREST's do.
        let headers = status == 401 ? [("WWW-Authenticate", "Bearer")] : []
        return APIError(
            status: status, code: state, message: info[.message] ?? "database error", details: info[.detail],
            hint: info[.hint],
            headers: headers)
    }

    // MARK: - Auth (GoTrue-compatible subset)

    /// The user object GoTrue returns (`GET /auth/v1/user`, and inside every grant).
    static func userObject(id: String, email: String, createdAt: String, signedInAt: String) -> [String: Any] {
        [
            "id": id, "aud": "authenticated", "role": "authenticated", "email": email, "phone": "",
            "email_confirmed_at": createdAt, "confirmed_at": createdAt, "last_sign_in_at": signedInAt,
            "app_metadata": ["provider": "email", "providers": ["email"]], "user_metadata": [String: Any](),
            "identities": [
                [
                    "identity_id": id, "id": id, "user_id": id, "provider": "email",
                    "identity_data": ["email": email, "sub": id, "email_verified": true], "created_at": createdAt,
                    "updated_at": createdAt,
                    "last_sign_in_at": signedInAt, "email": email,
                ] as [String: Any]
            ],
            "created_at": createdAt, "updated_at": signedInAt, "is_anonymous": false,
        ]
    }

    /// Issues an access token and a fresh refresh token for `user`, in GoTrue's shape.
    ///
    /// `amr` names how and when the user signed in, as GoTrue's does: a refreshed token keeps
    /// the method and time of the sign-in it descends from (`method`, `signedInAt`), so a
    /// function that asks for a recent sign-in with a password (the trust log's
    /// `start_trust_log`) can tell one.
    func session(
        user: String, email: String, createdAt: String, sessionID: String? = nil, signedInAt: Int? = nil,
        method: String = "password"
    ) async throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        let signedInAt = signedInAt ?? now
        let session: String
        if let sessionID {
            session = sessionID
        } else {
            // A sign-in starts a session, as GoTrue's do; refreshes keep it.
            session = UUID().uuidString.lowercased()
            _ = try await authClient.query(
                "INSERT INTO auth.sessions (id, user_id) VALUES (\(session)::uuid, \(user)::uuid)", logger: logger)
        }
        let access = JWT.sign(
            [
                "sub": user, "role": "authenticated", "aud": configuration.jwtAudience, "email": email,
                "iat": now, "exp": now + configuration.jwtExpiry, "session_id": session,
                "jti": UUID().uuidString.lowercased(),
                "is_anonymous": false, "amr": [["method": method, "timestamp": signedInAt]],
            ], secret: configuration.jwtSecret)
        let refresh = JWT.base64URL(SecureBytes(randomCount: 24).withUnsafeBytes { Array($0) })
        // Only a digest is stored: a copy of the table gives nobody a usable refresh token.
        _ = try await authClient.query(
            """
            INSERT INTO auth.refresh_tokens (token, user_id, session_id, signed_in_at, sign_in_method)
            VALUES (encode(digest(\(refresh), 'sha256'), 'hex'), \(user)::uuid, \(session)::uuid, \(signedInAt), \(method))
            """, logger: logger)
        let signedIn = ISO8601DateFormatter().string(from: Date())
        let object: [String: Any] = [
            "access_token": access, "token_type": "bearer", "expires_in": configuration.jwtExpiry,
            "expires_at": now + configuration.jwtExpiry,
            "refresh_token": refresh,
            "user": Self.userObject(id: user, email: email, createdAt: createdAt, signedInAt: signedIn),
        ]
        return String(
            decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    /// `GET /auth/v1/user`: the user of a valid bearer token.
    func currentUser(authorization: String?) async throws -> Answer {
        guard let authorization, authorization.prefix(7).lowercased() == "bearer " else {
            return .json(
                401, #"{"code":401,"error_code":"no_authorization","msg":"This endpoint requires a Bearer token"}"#)
        }
        let claims: String
        do {
            (claims, _) = try JWT.verify(
                String(authorization.dropFirst(7)), secret: configuration.jwtSecret, audience: configuration.jwtAudience
            )
        } catch {
            return .json(
                403, #"{"code":403,"error_code":"bad_jwt","msg":"invalid JWT: unable to parse or verify signature"}"#)
        }
        guard
            let sub = (try? JSONSerialization.jsonObject(with: Data(claims.utf8)) as? [String: Any])?["sub"] as? String,
            UUID(uuidString: sub) != nil
        else {
            return .json(403, #"{"code":403,"error_code":"bad_jwt","msg":"invalid claim: missing sub claim"}"#)
        }
        let rows = try await authClient.query(
            """
            SELECT id::text, email, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') FROM auth.users WHERE id = \(sub)::uuid
            """, logger: logger)
        for try await (id, email, created) in rows.decode((String, String, String).self) {
            let object = Self.userObject(id: id, email: email, createdAt: created, signedInAt: created)
            return .json(
                200,
                String(
                    decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
            )
        }
        return .json(
            404, #"{"code":404,"error_code":"user_not_found","msg":"User from sub claim in JWT does not exist"}"#)
    }

    func signUp(email: String, password: String) async throws -> Answer {
        guard !email.isEmpty, password.count >= 6 else {
            return .json(
                422, #"{"code":422,"error_code":"weak_password","msg":"Password should be at least 6 characters."}"#)
        }
        let rows = try await authClient.query(
            """
            INSERT INTO auth.users (email, encrypted_password) VALUES (\(email), crypt(\(password), gen_salt('bf', 6)))
            ON CONFLICT (email) DO NOTHING RETURNING id::text, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
            """, logger: logger)
        var found: (String, String)?
        for try await (id, created) in rows.decode((String, String).self) { found = (id, created) }
        guard let (id, created) = found else {
            return .json(422, #"{"code":422,"error_code":"user_already_exists","msg":"User already registered"}"#)
        }
        return .json(200, try await session(user: id, email: email, createdAt: created))
    }

    func passwordGrant(email: String, password: String) async throws -> Answer {
        let rows = try await authClient.query(
            """
            SELECT id::text, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') FROM auth.users
            WHERE email = \(email) AND encrypted_password = crypt(\(password), encrypted_password)
            """, logger: logger)
        var found: (String, String)?
        for try await (id, created) in rows.decode((String, String).self) { found = (id, created) }
        guard let (id, created) = found else {
            return Self.invalidGrant("Invalid login credentials", code: "invalid_credentials")
        }
        return .json(200, try await session(user: id, email: email, createdAt: created))
    }

    func refreshGrant(token: String) async throws -> Answer {
        let rows = try await authClient.query(
            """
            UPDATE auth.refresh_tokens r SET revoked = true FROM auth.users u, auth.sessions s
            WHERE r.token = encode(digest(\(token), 'sha256'), 'hex') AND NOT r.revoked AND u.id = r.user_id
                AND s.id = r.session_id
            RETURNING u.id::text, u.email, to_char(u.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                coalesce(r.session_id::text, ''), coalesce(r.signed_in_at, 0), coalesce(r.sign_in_method, 'unknown')
            """, logger: logger)
        var found: (String, String, String, String, Int, String)?
        for try await row in rows.decode((String, String, String, String, Int, String).self) { found = row }
        guard let (id, email, created, session, signedIn, method) = found else {
            return Self.invalidGrant("Invalid Refresh Token: Refresh Token Not Found", code: "refresh_token_not_found")
        }
        return .json(
            200,
            try await self.session(
                user: id, email: email, createdAt: created, sessionID: session.isEmpty ? nil : session,
                signedInAt: signedIn, method: method))
    }

    /// `POST /auth/v1/logout?scope=global|local|others`: ends the user's refresh tokens, all of
    /// them, the caller's session's, or every other session's; 204 as GoTrue answers. Access
    /// tokens already issued stay valid until they expire, as with GoTrue.
    func logout(authorization: String?, scope: String) async throws -> Answer {
        guard let authorization, authorization.prefix(7).lowercased() == "bearer " else {
            return .json(
                401, #"{"code":401,"error_code":"no_authorization","msg":"This endpoint requires a Bearer token"}"#)
        }
        guard
            let (claims, _) = try? JWT.verify(
                String(authorization.dropFirst(7)), secret: configuration.jwtSecret, audience: configuration.jwtAudience
            ),
            let object = try? JSONSerialization.jsonObject(with: Data(claims.utf8)) as? [String: Any],
            let sub = object["sub"] as? String, UUID(uuidString: sub) != nil
        else {
            return .json(
                403, #"{"code":403,"error_code":"bad_jwt","msg":"invalid JWT: unable to parse or verify signature"}"#)
        }
        let session = (object["session_id"] as? String).flatMap { UUID(uuidString: $0) }?.uuidString.lowercased() ?? ""
        switch scope {
        // Ending a session deletes it; its refresh tokens go with it (the foreign key cascades).
        case "global":
            _ = try await authClient.query("DELETE FROM auth.sessions WHERE user_id = \(sub)::uuid", logger: logger)
        case "local":
            _ = try await authClient.query(
                "DELETE FROM auth.sessions WHERE user_id = \(sub)::uuid AND id::text = \(session)", logger: logger)
        case "others":
            _ = try await authClient.query(
                "DELETE FROM auth.sessions WHERE user_id = \(sub)::uuid AND id::text IS DISTINCT FROM \(session)",
                logger: logger)
        default:
            return .json(400, #"{"code":400,"error_code":"validation_failed","msg":"Unsupported logout scope"}"#)
        }
        return .json(204, "")
    }

    static func invalidGrant(_ message: String, code: String) -> Answer {
        let object: [String: Any] = [
            "code": 400, "error_code": code, "msg": message, "error": "invalid_grant", "error_description": message,
        ]
        return .json(
            400,
            String(
                decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(),
                as: UTF8.self))
    }
}
