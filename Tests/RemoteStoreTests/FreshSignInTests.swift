import Foundation
import RemoteStore
import SyncModel
import TestStack
import Testing

/// A fresh sign-in means a password (`*_fresh_sign_in_methods.sql`): starting a trust log and
/// asking for a reset replace who the user is, and a way in that proves only the mailbox (a magic
/// link, an email code, a recovery or invite link) is what a thief of the email account has.
@Suite("A fresh sign-in means a password", .enabled(if: !StackEnvironment.skipped))
struct FreshSignInTests {
    static let mailboxWays = ["magiclink", "email", "recovery", "invite"]

    @Test(
        "a sign-in by mailbox (magic link, email code, recovery, invite) starts no log and asks for no reset; a password does",
        arguments: [false, true])
    func mailboxIsNotFresh(deployed: Bool) async throws {
        let stack = try StackEnvironment.require()
        let base = deployed ? stack.deployedURL : stack.url
        let email = "fresh-\(UUID().canonical.prefix(8))@example.com"
        let signUp = try await stack.request(
            "POST", "/auth/v1/signup", base: base, body: #"{"email":"\#(email)","password":"correct horse"}"#)
        #expect(signUp.status == 200, "\(signUp.status) \(signUp.body)")
        let session = try Self.object(signUp.body)
        let user = try #require(
            ((session["user"] as? [String: Any])?["id"] as? String).flatMap { UUID(uuidString: $0) })
        let password = try #require(session["access_token"] as? String)
        let credential = try await stack.registeredCredential(for: UUID(), user: user, base: base)
        let calls = [
            ("start_trust_log", #"{"entries":["AA=="],"backups":[null]}"#),
            ("request_identity_reset", #"{"entry":"AA==","backup":null,"accept":null,"accept_backup":null}"#),
        ]
        for way in Self.mailboxWays {
            let link = try await stack.request(
                "POST", "/auth/v1/admin/generate_link", base: base, token: stack.serviceKey,
                body: #"{"type":"\#(way)","email":"\#(email)"}"#, apiKey: .some(stack.serviceKey))
            #expect(link.status == 200, "\(way): \(link.status) \(link.body)")
            let code = try #require(try Self.object(link.body)["email_otp"] as? String)
            let verified = try await stack.request(
                "POST", "/auth/v1/verify", base: base,
                body: #"{"type":"\#(way)","email":"\#(email)","token":"\#(code)"}"#)
            #expect(verified.status == 200, "\(way): \(verified.status) \(verified.body)")
            let token = try #require(try Self.object(verified.body)["access_token"] as? String)
            for (function, body) in calls {
                let r = try await stack.request(
                    "POST", "/rest/v1/rpc/\(function)", base: base, token: token, body: body, credential: credential)
                #expect(r.body.contains("28000"), "\(way) signs in fresh enough for \(function): \(r.status) \(r.body)")
            }
            // A one-time token is spent once.
            let again = try await stack.request(
                "POST", "/auth/v1/verify", base: base,
                body: #"{"type":"\#(way)","email":"\#(email)","token":"\#(code)"}"#)
            #expect(again.status == 403, "\(way): \(again.status)")
        }
        // The password's sign-in passes the rule: the same calls fail on the entry instead.
        for (function, body) in calls {
            let r = try await stack.request(
                "POST", "/rest/v1/rpc/\(function)", base: base, token: password, body: body, credential: credential)
            #expect(!r.body.contains("28000") && r.status >= 400, "\(function): \(r.status) \(r.body)")
        }
        // So does a second factor's, for a user who enrolled one.
        let now = Int(Date().timeIntervalSince1970)
        let secondFactor = stack.sign(
            claims:
                #"{"aud":"authenticated","exp":\#(now + 600),"iat":\#(now),"role":"authenticated","sub":"\#(user.canonical)","amr":[{"method":"magiclink","timestamp":\#(now - 5_000)},{"method":"totp","timestamp":\#(now)}]}"#
        )
        let r = try await stack.request(
            "POST", "/rest/v1/rpc/start_trust_log", base: base, token: secondFactor, body: calls[0].1,
            credential: credential)
        #expect(!r.body.contains("28000") && r.status >= 400, "\(r.status) \(r.body)")
    }

    static func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }
}
