import ConformanceVectors
import Foundation
import SyncModel

/// Produces `testvectors/lockscreen-sanitiser-v2.json` (notifications.md): inputs and the exact
/// text the lock-screen sanitiser makes of them.
///
/// Every expected output below is written by hand; generation fails when the implementation
/// disagrees with one, so the file is never just a copy of what the code happens to do.
public enum LockScreenVectorGenerator {
    struct OutputTest: Encodable {
        var tcId: Int
        var comment: String
        var flags: [String]
        var input: String
        var output: String
        var result = "valid"
    }

    /// A case whose output the implementation disagreed with.
    public struct Disagreement: Error, CustomStringConvertible {
        public let comment: String
        public var description: String { "the sanitiser disagrees with the expected output of \"\(comment)\"" }
    }

    static let r = LockScreenText.redaction

    /// (comment, flags, input, expected output)
    static var cases: [(String, [String], String, String)] {
        let b64 = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlq" // 48 characters
        let jwt =
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwicm9sZSI6ImF1dGhlbnRpY2F0ZWQifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
        // 43 characters whose runs of base64 characters stay short of the base64 pattern's 40.
        let sessBody = "abcdefghij-klmnopqrst_uvwxyzABCD-EFGHIJKLMN"
        let sess = "sess_" + sessBody
        // "é" is one scalar and one grapheme, and no pattern's character: filler for the cut.
        func filler(_ count: Int) -> String { String(repeating: "\u{E9}", count: count) }
        let round3: [(String, [String], String, String)] = [
            ("plain text passes", ["Normal"], "Running tests...", "Running tests..."),
            ("empty text", ["Normal"], "", ""),
            ("keyword: token=", ["KeywordValue"], "token=abc123", r),
            ("keyword: api_key with spaces and colon", ["KeywordValue"], "set api_key : xyz-789 now", "set \(r) now"),
            ("keyword: api-key", ["KeywordValue"], "api-key=k1", r),
            ("keyword: apikey", ["KeywordValue"], "apikey=k1", r),
            ("keyword: api key with a space is not a keyword", ["KeywordValue"], "api key=k1", "api key=k1"),
            ("keyword: upper case", ["KeywordValue", "CaseFolding"], "PASSWORD: hunter2", r),
            (
                "keyword: mixed case secret, its value up to white space (v1 kept the !)",
                ["KeywordValue", "CaseFolding"], "My SeCrEt=s3cr3t!", "My \(r)"
            ),
            ("keyword: credential with a double quote", ["KeywordValue"], "credential=\"abc\"", "\(r)\""),
            ("keyword: single quote", ["KeywordValue"], "token: 'abc-def' ok", "\(r)' ok"),
            ("keyword: the value runs to white space (v1 stopped at the dot)", ["KeywordValue"], "token=abc.def", r),
            ("keyword: no separator, no match", ["KeywordValue"], "token abc", "token abc"),
            ("keyword: separator without a value", ["KeywordValue"], "password: ", "password: "),
            (
                "keyword: a component ending with it, marked whole (v1 kept my)", ["KeywordValue"], "mytoken=abc", r
            ),
            (
                "keyword: non-ASCII value letters, and the ! (v2)", ["KeywordValue", "NonASCII"],
                "password=p\u{E4}ssw\u{F6}rd!", r
            ),
            ("keyword: combining mark in the value", ["KeywordValue", "NonASCII"], "secret=cafe\u{301}x", r),
            ("keyword: long s folds to s", ["KeywordValue", "CaseFolding", "NonASCII"], "\u{17F}ecret=x", r),
            ("keyword: Kelvin sign folds to k", ["KeywordValue", "CaseFolding", "NonASCII"], "api\u{212A}ey=x", r),
            ("keyword: no-break space counts as space", ["KeywordValue", "NonASCII"], "token\u{A0}=\u{A0}x", r),
            (
                "bearer after Authorization: the header name goes too (v2)", ["Bearer", "KeywordValue"],
                "Authorization: Bearer abc-123", r
            ),
            ("bearer: lower case, its word runs past a dot (v2)", ["Bearer", "CaseFolding"], "bearer abc.def", r),
            ("bearer: needs whitespace", ["Bearer"], "bearerabc", "bearerabc"),
            ("bearer: alone", ["Bearer"], "Bearer", "Bearer"),
            ("base64: 48 characters", ["Base64"], "key \(b64) end", "key \(r) end"),
            ("base64: 39 characters pass", ["Base64"], String(b64.prefix(39)), String(b64.prefix(39))),
            ("base64: 40 characters", ["Base64"], String(b64.prefix(40)), r),
            ("base64: padding kept with the match", ["Base64"], b64 + "==x", "\(r)x"),
            ("base64: at most two padding characters", ["Base64"], b64 + "===", "\(r)="),
            ("base64: + and /", ["Base64"], "a+b/" + String(b64.prefix(36)) + " z", "\(r) z"),
            ("session secret text form", ["SessionToken"], "secret is \(sess)", "secret is \(r)"),
            ("session secret after words", ["SessionToken"], "using \(sess) now", "using \(r) now"),
            (
                "sess_ with 42 characters", ["SessionToken"], "sess_" + sessBody.dropLast(),
                "sess_" + sessBody.dropLast()
            ),
            ("sess_ followed by more characters", ["SessionToken"], sess + "XY", "\(r)XY"),
            ("JWT", ["JWT"], "got \(jwt) back", "got \(r) back"),
            ("JWT without a signature", ["JWT"], "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.", r),
            (
                "JWT needs two dots", ["JWT"], "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0",
                "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0"
            ),
            ("private key header", ["PrivateKey"], "-----BEGIN RSA PRIVATE KEY----- x", "\(r) x"),
            ("private key header without a kind", ["PrivateKey"], "-----BEGIN PRIVATE KEY-----", r),
            ("public key header passes", ["PrivateKey"], "-----BEGIN PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----"),
            (
                "PEM block: header and the key lines", ["PrivateKey", "Base64", "ControlCharacters"],
                "-----BEGIN EC PRIVATE KEY-----\n\(b64)\n-----END EC PRIVATE KEY-----",
                "\(r)-----END EC PRIVATE KEY-----"
            ),
            ("overlap: JWT after a keyword", ["Overlap", "JWT", "KeywordValue"], "token=\(jwt)", r),
            ("overlap: JWT after bearer", ["Overlap", "JWT", "Bearer"], "Bearer \(jwt)", r),
            (
                "overlap: keyword value that is base64 with +", ["Overlap", "KeywordValue", "Base64"],
                "secret=abc+" + b64, r
            ),
            ("overlap: repeated keyword", ["Overlap", "KeywordValue"], "token=token=abc", r),
            ("overlap: two secrets side by side", ["Overlap"], "token=a \(sess)", "\(r) \(r)"),
            (
                "control characters removed", ["ControlCharacters"], "a\u{0}b\u{7}c\u{1B}[31md\u{7F}e\u{85}f",
                "abc[31mdef"
            ),
            ("tab and newline removed", ["ControlCharacters"], "line one\nline\ttwo\r\n", "line onelinetwo"),
            ("control character inside a keyword", ["ControlCharacters", "KeywordValue"], "pass\u{7}word=hunter2", r),
            ("control character inside a value", ["ControlCharacters", "KeywordValue"], "token=abc\u{0}def", r),
            ("newline between bearer and its token", ["ControlCharacters", "Bearer"], "Bearer\nabc", r),
            (
                "format characters (Cf) are hidden too", ["HiddenCharacters"], "a\u{200B}b\u{202E}c\u{FEFF}d\u{AD}e",
                "abcde"
            ),
            (
                "non-ASCII text passes", ["NonASCII"], "Caf\u{E9} \u{1F600} \u{65E5}\u{672C}\u{8A9E}",
                "Caf\u{E9} \u{1F600} \u{65E5}\u{672C}\u{8A9E}"
            ),
            ("200 scalars kept", ["Cut"], filler(200), filler(200)),
            ("201 scalars cut to 200", ["Cut"], filler(201), filler(200)),
            (
                "cut before a combining sequence that would pass 200", ["Cut", "Grapheme"], filler(199) + "e\u{301}",
                filler(199)
            ),
            (
                "combining sequence ending at 200 kept", ["Cut", "Grapheme"], filler(198) + "e\u{301}b",
                filler(198) + "e\u{301}"
            ),
            (
                "a ZWJ emoji sequence loses its joiners (Cf) before the cut", ["Cut", "HiddenCharacters"],
                filler(197) + "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}", filler(197) + "\u{1F468}\u{1F469}\u{1F467}"
            ),
            (
                "cut before an emoji with a skin tone", ["Cut", "Grapheme"], filler(199) + "\u{1F44D}\u{1F3FD}",
                filler(199)
            ),
            ("cut before a flag", ["Cut", "Grapheme"], filler(199) + "\u{1F1EB}\u{1F1F7}", filler(199)),
            (
                "cut counts the redaction, not the secret", ["Cut", "Base64"],
                filler(195) + " " + b64 + String(repeating: "b", count: 10), filler(195) + " [RED"
            ),
            (
                "controls removed before the cut", ["Cut", "ControlCharacters"],
                String(repeating: "\u{7}", count: 50) + filler(200), filler(200)
            ),
        ]
        return round3 + round4Cases + round5Cases + round5NearMisses
    }

    /// The JSON text of the vector file, ending in a newline.
    public static func generate() throws -> Data {
        var tests: [OutputTest] = []
        for (index, (comment, flags, input, output)) in cases.enumerated() {
            guard LockScreenText.sanitised(input) == output else { throw Disagreement(comment: comment) }
            tests.append(OutputTest(tcId: index + 1, comment: comment, flags: flags, input: input, output: output))
        }
        return try GeneratedVectorFile.encode(
            algorithm: .lockScreenSanitiserV2,
            header: [
                "The lock-screen sanitiser of docs/notifications.md: output is exactly sanitise(input).",
                "Generated by `sync-vectors generate --kind lockscreen`; every output was written by hand.",
                "Only the first 800 scalars are read; when there are more, what follows the last visible White_Space",
                "  among them is marked. Hidden characters (Cc, Cf, U+2028, U+2029 and Default_Ignorable_Code_Point",
                "  as of Unicode 15.1) are never shown. The rules are matched in two views:",
                "  the input without its hidden characters that are not White_Space, and the input without any;",
                "  in both, each scalar is replaced by its own NFKC form and then by the confusables table.",
                "Matches of every rule are marked; each marked run becomes [REDACTED]; hidden characters are",
                "  removed; the result is cut to 200 Unicode scalars at a grapheme boundary.",
                "Version 2: keyword identifiers by component, values up to white space, options, URL user",
                "  information up to the last @, more token formats and look-alikes, commit ids and paths kept.",
            ],
            groupType: "LockScreenSanitiser", tests: tests)
    }
}
