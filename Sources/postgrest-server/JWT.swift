import Foundation
import SecretCrypto

/// HS256 JSON Web Tokens, as Supabase issues and PostgREST verifies them.
enum JWT {
    enum Failure: Error {
        /// Empty, undecodable or badly signed: PostgREST's PGRST301.
        case invalid(String)
        /// Signed correctly but expired: PostgREST's PGRST303 "JWT expired".
        case expired
    }

    static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func decodeBase64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    /// Signs `claims` with `secret`.
    static func sign(_ claims: [String: Any], secret: SecureBytes) -> String {
        let header = base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let payload = base64URL((try? JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])) ?? Data())
        let input = header + "." + payload
        let signature = HMACSHA256.authenticationCode(for: Array(input.utf8), using: secret)
        return input + "." + base64URL(signature)
    }

    /// Verifies the signature and expiry and returns the claims' JSON text and object.
    static func verify(_ token: String, secret: SecureBytes, now: Date = Date()) throws(Failure) -> (json: String, claims: [String: Any]) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = decodeBase64URL(parts[0]), let payload = decodeBase64URL(parts[1]),
              let signature = decodeBase64URL(parts[2]) else {
            throw .invalid("JWSError (CompactDecodeError Invalid number of parts: Expected 3 parts; got \(parts.count))")
        }
        guard let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any], header["alg"] as? String == "HS256" else {
            throw .invalid("JWSError JWSInvalidSignature")
        }
        let input = Array((parts[0] + "." + parts[1]).utf8)
        guard HMACSHA256.isValidAuthenticationCode(Array(signature), for: input, using: secret), signature.count == 32 else {
            throw .invalid("JWSError JWSInvalidSignature")
        }
        guard let claims = (try? JSONSerialization.jsonObject(with: payload)) as? [String: Any] else {
            throw .invalid("JWTClaimsSetDecodeError")
        }
        if let exp = claims["exp"] as? Double, exp <= now.timeIntervalSince1970 { throw .expired }
        if let exp = claims["exp"] as? Int, Double(exp) <= now.timeIntervalSince1970 { throw .expired }
        return (String(decoding: payload, as: UTF8.self), claims)
    }
}
