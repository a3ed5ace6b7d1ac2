extension LockScreenVectorGenerator {
    /// Hidden characters, look-alikes and the common token formats (the audit's 40 crafted inputs,
    /// by kind). Every expected output is written by hand.
    static var round4Cases: [(String, [String], String, String)] {
        let hex64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        func split(_ text: String, every: Int, with hidden: String) -> String {
            var out = ""
            for (i, c) in text.enumerated() {
                if i > 0, i % every == 0 { out += hidden }
                out.append(c)
            }
            return out
        }
        let sessBody = "abcdefghij-klmnopqrst_uvwxyzABCD-EFGHIJKLMN"
        let ghp = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5" // 36 characters after the prefix
        let fullwidthPassword = "\u{FF30}\u{FF21}\u{FF33}\u{FF33}\u{FF37}\u{FF2F}\u{FF32}\u{FF24}"
        let fullwidthHunter = "\u{FF48}\u{FF55}\u{FF4E}\u{FF54}\u{FF45}\u{FF52}\u{FF12}"
        return [
            (
                "JWT split by zero-width spaces", ["HiddenCharacters", "JWT"],
                "got eyJhbGci\u{200B}OiJIUzI1NiJ9.eyJzdWIi\u{200B}OiIxIn0.c2ln ok", "got \(r) ok"
            ),
            (
                "64-character key split by soft hyphens", ["HiddenCharacters", "Base64"],
                "key " + split(hex64, every: 16, with: "\u{AD}") + " end", "key \(r) end"
            ),
            (
                "64-character key split by word joiners", ["HiddenCharacters", "Base64"],
                split(hex64, every: 8, with: "\u{2060}"), r
            ),
            (
                "session secret split by a BOM", ["HiddenCharacters", "SessionToken"],
                "sess_abcdefghij\u{FEFF}-klmnopqrst_uvwxyzABCD-EFGHIJKLMN done", "\(r) done"
            ),
            (
                "session secret split by tag characters", ["HiddenCharacters", "SessionToken"],
                "sess_abcdefghij-klmno\u{E0041}\u{E0042}pqrst_uvwxyzABCD-EFGHIJKLMN", r
            ),
            (
                "password: split by a bidi override", ["HiddenCharacters", "KeywordValue"], "pass\u{202E}word: hunter2",
                r
            ),
            (
                "password: separator wrapped in bidi isolates", ["HiddenCharacters", "KeywordValue"],
                "password\u{2066}:\u{2069} hunter2 ok", "\(r) ok"
            ),
            ("token= split by a zero-width joiner", ["HiddenCharacters", "KeywordValue"], "tok\u{200D}en=abc", r),
            ("value split by a zero-width non-joiner", ["HiddenCharacters", "KeywordValue"], "secret=ab\u{200C}cd", r),
            ("line separator between bearer and its token", ["HiddenCharacters", "Bearer"], "Bearer\u{2028}abc", r),
            ("paragraph separator removed", ["HiddenCharacters"], "one\u{2029}two", "onetwo"),
            (
                "GitHub token split by a variation selector (Mn, default ignorable)",
                ["HiddenCharacters", "TokenFormat"],
                String(ghp.prefix(22)) + "\u{FE0F}" + String(ghp.dropFirst(22)), r
            ),
            (
                "password split by a combining grapheme joiner", ["HiddenCharacters", "KeywordValue"],
                "pass\u{34F}word=hunter2", r
            ),
            (
                "token value split by a Hangul filler", ["HiddenCharacters", "KeywordValue"], "token=abc\u{3164}def ok",
                "\(r) ok"
            ),
            ("an unassigned default ignorable is hidden", ["HiddenCharacters"], "a\u{2065}b", "ab"),
            (
                "fullwidth PASSWORD: and value", ["Confusables", "KeywordValue"],
                fullwidthPassword + "\u{FF1A}" + fullwidthHunter, r
            ),
            ("fullwidth equals sign", ["Confusables", "KeywordValue"], "secret\u{FF1D}x y", "\(r) y"),
            ("Cyrillic s in sess_", ["Confusables", "SessionToken"], "\u{455}ess_" + sessBody, r),
            ("Cyrillic letters in password", ["Confusables", "KeywordValue"], "\u{440}\u{430}ssword=x", r),
            ("Greek capitals in TOKEN", ["Confusables", "KeywordValue"], "\u{3A4}\u{39F}\u{39A}\u{395}\u{39D}=abc", r),
            (
                "fullwidth base64 run", ["Confusables", "Base64"],
                String(repeating: "\u{FF41}\u{FF22}\u{FF13}", count: 14), r
            ),
            (
                "fullwidth GitHub token", ["Confusables", "TokenFormat"],
                "\u{FF47}\u{FF48}\u{FF50}\u{FF3F}" + ghp.dropFirst(4), r
            ),
            (
                "Cyrillic text passes unchanged", ["Confusables", "NonASCII"],
                "\u{41F}\u{440}\u{438}\u{432}\u{435}\u{442}", "\u{41F}\u{440}\u{438}\u{432}\u{435}\u{442}"
            ),
            (
                "fullwidth text passes unchanged", ["Confusables", "NonASCII"],
                "\u{FF48}\u{FF45}\u{FF4C}\u{FF4C}\u{FF4F}", "\u{FF48}\u{FF45}\u{FF4C}\u{FF4C}\u{FF4F}"
            ),
            ("GitHub classic token", ["TokenFormat"], "push with \(ghp) now", "push with \(r) now"),
            ("GitHub token with 35 characters passes", ["TokenFormat"], String(ghp.dropLast()), String(ghp.dropLast())),
            ("GitHub fine-grained token", ["TokenFormat"], "github_pat_11ABCDEFG0123456789_abcdefghij", r),
            ("Stripe live secret key", ["TokenFormat"], "sk_live_4eC39HqLyjWDarjtT1zdp7dc!", "\(r)!"),
            ("Stripe restricted test key", ["TokenFormat"], "rk_test_4eC39HqLyjWDarjtT1zd", r),
            (
                "Stripe key with 15 characters passes", ["TokenFormat"], "sk_live_4eC39HqLyjWDarj",
                "sk_live_4eC39HqLyjWDarj"
            ),
            (
                "Stripe publishable key passes", ["TokenFormat"], "pk_live_4eC39HqLyjWDarjtT1zdp7dc",
                "pk_live_4eC39HqLyjWDarjtT1zdp7dc"
            ),
            ("AWS access key id", ["TokenFormat"], "id AKIAIOSFODNN7EXAMPLE set", "id \(r) set"),
            ("AWS temporary key id, 16 characters only", ["TokenFormat"], "ASIAIOSFODNN7EXAMPLEZ", "\(r)Z"),
            ("AWS key id with 15 characters passes", ["TokenFormat"], "AKIAIOSFODNN7EXAMPL", "AKIAIOSFODNN7EXAMPL"),
            ("Slack bot token", ["TokenFormat"], "xoxb-123456789012-1234567890123-AbCdEfGhIj", r),
            ("Slack prefix with a short body passes", ["TokenFormat"], "xoxb-123456789", "xoxb-123456789"),
            (
                "URL user and password", ["UserInfo"], "clone https://user:hunter2@github.com/x.git",
                "clone https://\(r)@github.com/x.git"
            ),
            ("URL user only", ["UserInfo"], "https://deploy@host", "https://\(r)@host"),
            (
                "URL user info split by a zero-width space", ["UserInfo", "HiddenCharacters"],
                "https://user:\u{200B}hunter2@host", "https://\(r)@host"
            ),
            ("@ in a URL's path passes", ["UserInfo"], "see https://example.com/a@b", "see https://example.com/a@b"),
            ("an e-mail address passes", ["UserInfo"], "mail me@example.com", "mail me@example.com"),
            // A quote may close the keyword, as in JSON and quoted assignments.
            ("JSON password", ["KeywordValue"], #"{"password": "hunter2"}"#, "{\"\(r)\"}"),
            ("JSON token without spaces", ["KeywordValue"], #"{"token":"x1-y2"}"#, "{\"\(r)\"}"),
            ("quoted api_key assignment", ["KeywordValue"], "set 'api_key'='abc-123' now", "set '\(r)' now"),
        ]
    }
}
