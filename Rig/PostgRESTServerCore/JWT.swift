import Foundation
import SecretCrypto

/// HS256 JSON Web Tokens, as Supabase issues and PostgREST verifies them.
///
/// Verification is strict: three parts, each the canonical unpadded base64url of its bytes
/// (a re-encoded signature with padding or the standard alphabet is refused, so one token has
/// one spelling); `alg` HS256; a 32-byte signature compared in constant time; a numeric `exp`
/// (required); `nbf` and `iat`, when present, numeric and not in the future; `aud` equal to (or,
/// as an array, containing) the configured audience; `role` a string; for `authenticated`, a
/// `sub` that is a UUID. `nbf` and `iat` may be up to 5 seconds ahead (clock skew between the
/// issuer and this server); `exp` has no grace.
package enum JWT {
    package enum Failure: Error {
        /// Empty, undecodable or badly signed: PostgREST's PGRST301.
        case invalid(String)
        /// Signed correctly but expired: PostgREST's PGRST303 "JWT expired".
        case expired
    }

    /// Seconds `nbf` and `iat` may lie in the future.
    package static let clockSkew: Double = 5
    /// The latest `exp` accepted (9999-12-31T23:59:59Z): `1e300` is not a date.
    package static let latestExpiry: Double = 253_402_300_799

    package static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Decodes one part, accepting only its canonical unpadded base64url spelling.
    package static func decodeBase64URL(_ text: Substring) -> Data? {
        guard
            text.utf8.allSatisfy({ byte in
                (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                    || byte == 0x2D || byte == 0x5F
            })
        else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), base64URL(data) == text else { return nil }
        return data
    }

    /// Signs `claims` with `secret`.
    package static func sign(_ claims: [String: Any], secret: SecureBytes) -> String {
        let header = base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let payload = base64URL((try? JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])) ?? Data())
        let input = header + "." + payload
        let signature = HMACSHA256.authenticationCode(for: Array(input.utf8), using: secret)
        return input + "." + base64URL(signature)
    }

    /// The registered claims this server checks, decoded with their JSON types enforced (a
    /// string, `null` or boolean `exp` fails to decode).
    struct Registered: Decodable {
        var exp: Double
        var nbf: Double?
        var iat: Double?
        var aud: Audience?
        var role: String?
        var sub: String?
    }

    enum Audience: Decodable {
        case one(String)
        case many([String])

        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(String.self) {
                self = .one(value)
                return
            }
            self = .many(try container.decode([String].self))
        }

        func contains(_ audience: String) -> Bool {
            switch self {
            case let .one(value): value == audience
            case let .many(values): values.contains(audience)
            }
        }
    }

    /// Whether the top-level JSON object in `data` names a member twice, after unescaping
    /// (`"sub"` and `"\u0073ub"` are the same name). Text that is not an object answers `false`;
    /// the JSON parse after this refuses it.
    package static func hasDuplicateMembers(_ data: Data) -> Bool {
        let bytes = Array(data)
        var index = 0
        func skipSpace() { while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 } }
        /// The string literal starting at `index` (a `"`), raw, with `index` moved past it.
        func string() -> [UInt8]? {
            guard index < bytes.count, bytes[index] == 0x22 else { return nil }
            let start = index
            index += 1
            while index < bytes.count {
                if bytes[index] == 0x5C {
                    index += 2
                    continue
                }
                if bytes[index] == 0x22 {
                    index += 1
                    return Array(bytes[start..<index])
                }
                index += 1
            }
            return nil
        }
        /// Skips one value: a string, or anything up to the `,` or `}` that ends it at depth 0.
        func skipValue() -> Bool {
            skipSpace()
            if index < bytes.count, bytes[index] == 0x22 { return string() != nil }
            var depth = 0
            while index < bytes.count {
                switch bytes[index] {
                case 0x22:
                    if string() == nil { return false }
                    continue
                case 0x7B, 0x5B: depth += 1
                case 0x7D, 0x5D:
                    if depth == 0 { return true }
                    depth -= 1
                case 0x2C where depth == 0: return true
                default: break
                }
                index += 1
            }
            return false
        }
        skipSpace()
        guard index < bytes.count, bytes[index] == 0x7B else { return false }
        index += 1
        var names = Set<String>()
        while true {
            skipSpace()
            guard let raw = string() else { return false }
            // The literal decoded as JSON, so escapes compare by what they mean.
            let name =
                (try? JSONSerialization.jsonObject(with: Data(raw), options: .fragmentsAllowed)) as? String
                ?? String(decoding: raw, as: UTF8.self)
            if !names.insert(name).inserted { return true }
            skipSpace()
            guard index < bytes.count, bytes[index] == 0x3A else { return false }
            index += 1
            guard skipValue() else { return false }
            skipSpace()
            guard index < bytes.count, bytes[index] == 0x2C else { return false }
            index += 1
        }
    }

    /// Verifies the token and returns the claims' JSON text and the role it asks for.
    package static func verify(
        _ token: String, secret: SecureBytes, audience: String, now: Date = Date()
    ) throws(Failure) -> (json: String, role: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw .invalid(
                "JWSError (CompactDecodeError Invalid number of parts: Expected 3 parts; got \(parts.count))")
        }
        guard let headerData = decodeBase64URL(parts[0]), let payload = decodeBase64URL(parts[1]),
            let signature = decodeBase64URL(parts[2])
        else {
            throw .invalid("JWSError (CompactDecodeError Invalid base64url encoding)")
        }
        // RFC 7519 §4: claim names are unique, or the token is refused. Parsers disagree on
        // which duplicate wins (Foundation's decoder takes the first, PostgreSQL's jsonb, which
        // reads `request.jwt.claims`, the last), so a token with two `sub`s would mean one user
        // here and another in SQL.
        guard !hasDuplicateMembers(headerData), !hasDuplicateMembers(payload) else {
            throw .invalid("JWTClaimsSetDecodeError: duplicate member names")
        }
        guard let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any],
            header["alg"] as? String == "HS256"
        else {
            throw .invalid("JWSError JWSInvalidSignature")
        }
        let input = Array((parts[0] + "." + parts[1]).utf8)
        guard signature.count == 32, HMACSHA256.isValidAuthenticationCode(Array(signature), for: input, using: secret)
        else {
            throw .invalid("JWSError JWSInvalidSignature")
        }
        guard (try? JSONSerialization.jsonObject(with: payload)) is [String: Any],
            let claims = try? JSONDecoder().decode(Registered.self, from: payload)
        else {
            throw .invalid(
                "JWTClaimsSetDecodeError: exp must be a number; nbf, iat numbers; aud a string or array; role, sub strings"
            )
        }
        let time = now.timeIntervalSince1970
        guard claims.exp.isFinite, claims.exp > 0, claims.exp <= latestExpiry else {
            throw .invalid("JWT exp is not a valid date")
        }
        guard claims.exp > time else { throw .expired }
        if let nbf = claims.nbf {
            guard nbf.isFinite, nbf <= time + clockSkew else { throw .invalid("JWT not yet valid") }
        }
        if let iat = claims.iat {
            guard iat.isFinite, iat <= time + clockSkew else { throw .invalid("JWT issued at future") }
        }
        guard let aud = claims.aud, aud.contains(audience) else { throw .invalid("JWT not in audience") }
        let role = claims.role ?? "anon"
        if role == "authenticated" {
            guard let sub = claims.sub, UUID(uuidString: sub) != nil else { throw .invalid("JWT sub is not a user id") }
        }
        return (String(decoding: payload, as: UTF8.self), role)
    }
}
