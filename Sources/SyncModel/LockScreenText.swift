import Foundation

/// The lock-screen sanitiser (notifications.md): the one function that text passes through
/// before it may reach a lock screen (a live activity's operation and task, an approval's summary
/// when a device shows details).
///
/// ``sanitised(_:)`` is deterministic and works on Unicode scalars (code points):
/// 1. **Hidden characters** (general category Cc or Cf, U+2028, U+2029, and the other
///    Default_Ignorable code points: ``invisibleRanges``) are never shown, and
///    they cannot hide a secret: the patterns are matched in two views of the text, one without
///    its hidden characters that are not White_Space (a tab or a line separator still separates
///    `bearer` from its token), one without any hidden character (a zero-width space, a soft hyphen,
///    a BOM, a bidi control or a newline inside a secret does not split it).
/// 2. **Matching form**: in each view, every scalar is replaced by its own NFKC form (fullwidth
///    `ＰＡＳＳＷＯＲＤ` is `PASSWORD`) and then by ``confusables`` (Cyrillic `ѕ` is `s`). A match
///    marks the original scalars it came from.
/// 3. Every match of any pattern, tried at every position of each view, is marked:
///    - `(?i)(api[_-]?key|token|secret|password|credential)["']?\s*[:=]\s*["']?[\w-]+`
///    - `(?i)bearer\s+[\w-]+`
///    - `[A-Za-z0-9+/]{40,}={0,2}`
///    - `sess_[A-Za-z0-9_-]{43}`
///    - `eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*` (a JWT)
///    - `-----BEGIN [A-Z ]*PRIVATE KEY-----`
///    - `gh[pousr]_[A-Za-z0-9]{36,}`, `github_pat_[A-Za-z0-9_]{22,}` (GitHub)
///    - `[rs]k_(live|test)_[A-Za-z0-9]{16,}` (Stripe)
///    - `(AKIA|ASIA)[A-Z0-9]{16}` (AWS access key ids)
///    - `xox[abposr]-[A-Za-z0-9-]{10,}` (Slack)
///    - `(?<=://)[^\s/?#@]+(?=@)` (a URL's user information, `https://user:password@host`)
///
///    Marking the union of all matches, rather than replacing pattern after pattern, makes the
///    result independent of the patterns' order: a JWT whose payload alone would match the
///    base64 pattern is still redacted whole, and `secret=` followed by base64 with a `+` in it
///    loses its whole value.
/// 4. Each maximal run of marked scalars (hidden characters inside it included) becomes one
///    `[REDACTED]`, and every hidden character is removed.
/// 5. The text is cut to at most ``maxLength`` scalars, at the last grapheme boundary that fits.
///
/// Character classes: `\s` is Unicode White_Space; `\w` is any letter (L*), mark (M*), number
/// (Nd, Nl, No) or connector punctuation (Pc), which covers both the Unicode and Python readings
/// of `\w`; `(?i)` folds ASCII letters and also lets `i` match `İ` and `ı`, `s` match `ſ` and `k`
/// match the Kelvin sign, as Python's `re` does.
public enum LockScreenText {
    /// The longest text that leaves the sanitiser, in Unicode scalars.
    public static let maxLength = 200
    /// What a redacted run becomes.
    public static let redaction = "[REDACTED]"

    /// `text` made safe for a lock screen (see the type's documentation).
    public static func sanitised(_ text: String) -> String {
        let original = Array(text.unicodeScalars)
        let hidden = original.map(isHidden)
        var marked = [Bool](repeating: false, count: original.count)
        func mark(droppingHiddenWhitespace: Bool) {
            let view = MatchingView(original) {
                hidden[$0] && (droppingHiddenWhitespace || !original[$0].properties.isWhitespace)
            }
            for (start, end) in matches(in: view.input) {
                for j in start..<end { marked[view.origin[j]] = true }
            }
        }
        mark(droppingHiddenWhitespace: false)
        if original.indices.contains(where: { hidden[$0] && original[$0].properties.isWhitespace }) {
            mark(droppingHiddenWhitespace: true)
        }
        var out = String.UnicodeScalarView()
        var i = 0
        while i < original.count {
            if hidden[i] {
                i += 1
            } else if marked[i] {
                out.append(contentsOf: redaction.unicodeScalars)
                while i < original.count, marked[i] || hidden[i] { i += 1 }
            } else {
                out.append(original[i])
                i += 1
            }
        }
        return cut(String(out), to: maxLength)
    }

    /// Whether `scalar` is never shown: general category Cc or Cf, U+2028 or U+2029, or one of
    /// ``invisibleRanges`` (characters drawn as nothing that are not Cf: variation selectors, the
    /// combining grapheme joiner, Hangul fillers...).
    public static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return invisibleRanges.contains { $0.contains(scalar.value) }
        }
    }

    /// Unicode's Default_Ignorable_Code_Point ranges (Unicode 15.1), listed here so that the
    /// definition does not move with the platform's Unicode tables; most of them are Cf anyway.
    public static let invisibleRanges: [ClosedRange<UInt32>] = [
        0x00AD...0x00AD, 0x034F...0x034F, 0x061C...0x061C, 0x115F...0x1160, 0x17B4...0x17B5, 0x180B...0x180F,
        0x200B...0x200F, 0x202A...0x202E, 0x2060...0x206F, 0x3164...0x3164, 0xFE00...0xFE0F, 0xFEFF...0xFEFF,
        0xFFA0...0xFFA0, 0xFFF0...0xFFF8, 0x1BCA0...0x1BCA3, 0x1D173...0x1D17A, 0xE0000...0xE0FFF,
    ]

    /// Look-alike letters matched as the Latin letter they imitate (after NFKC): Cyrillic and
    /// Greek letters drawn like `a`, `c`, `e`, `o`, `p`, `s`, `x`... The table is part of the
    /// sanitiser's definition (docs/notifications.md lists it).
    public static let confusables: [Unicode.Scalar: Unicode.Scalar] = {
        let pairs: [(UInt32, Unicode.Scalar)] = [
            // Cyrillic small letters
            (0x0430, "a"), (0x0435, "e"), (0x043E, "o"), (0x0440, "p"), (0x0441, "c"), (0x0443, "y"),
            (0x0445, "x"), (0x0455, "s"), (0x0456, "i"), (0x0458, "j"), (0x04BB, "h"), (0x04CF, "l"),
            (0x0501, "d"), (0x051B, "q"), (0x051D, "w"),
            // Cyrillic capital letters
            (0x0405, "S"), (0x0406, "I"), (0x0408, "J"), (0x0410, "A"), (0x0412, "B"), (0x0415, "E"),
            (0x041A, "K"), (0x041C, "M"), (0x041D, "H"), (0x041E, "O"), (0x0420, "P"), (0x0421, "C"),
            (0x0422, "T"), (0x0425, "X"), (0x04AE, "Y"), (0x051A, "Q"), (0x051C, "W"),
            // Greek letters
            (0x0391, "A"), (0x0392, "B"), (0x0395, "E"), (0x0396, "Z"), (0x0397, "H"), (0x0399, "I"),
            (0x039A, "K"), (0x039C, "M"), (0x039D, "N"), (0x039F, "O"), (0x03A1, "P"), (0x03A4, "T"),
            (0x03A5, "Y"), (0x03A7, "X"), (0x03B1, "a"), (0x03B9, "i"), (0x03BD, "v"), (0x03BF, "o"),
            (0x03C1, "p"),
        ]
        return Dictionary(uniqueKeysWithValues: pairs.map { (Unicode.Scalar($0.0)!, $0.1) })
    }()

    /// One view of the text in its matching form, with the original scalar each matching scalar
    /// came from.
    struct MatchingView {
        let input: Input
        let origin: [Int]

        init(_ original: [Unicode.Scalar], dropping: (Int) -> Bool) {
            var scalars: [Unicode.Scalar] = []
            var origin: [Int] = []
            for i in original.indices where !dropping(i) {
                for scalar in LockScreenText.matchingForm(original[i]) {
                    scalars.append(scalar)
                    origin.append(i)
                }
            }
            input = Input(scalars)
            self.origin = origin
        }
    }

    /// `scalar`'s NFKC form, each scalar of it replaced by its ``confusables`` entry if it has one.
    static func matchingForm(_ scalar: Unicode.Scalar) -> [Unicode.Scalar] {
        if scalar.isASCII { return [scalar] }
        return String(scalar).precomposedStringWithCompatibilityMapping.unicodeScalars.map { confusables[$0] ?? $0 }
    }

    /// The union of every pattern's match at every position of `input`, as disjoint ascending
    /// ranges `[start, end)`.
    static func matches(in input: Input) -> [(Int, Int)] {
        var ranges: [(Int, Int)] = []
        for start in input.s.indices {
            var end = start
            for pattern in patterns {
                if let e = pattern(input, start) { end = max(end, e) }
            }
            guard end > start else { continue }
            if let last = ranges.last, start <= last.1 {
                ranges[ranges.count - 1].1 = max(last.1, end)
            } else {
                ranges.append((start, end))
            }
        }
        return ranges
    }

    /// `text` cut to at most `limit` Unicode scalars without splitting a grapheme cluster.
    public static func cut(_ text: String, to limit: Int) -> String {
        guard text.unicodeScalars.count > limit else { return text }
        var count = 0
        var end = text.startIndex
        for character in text {
            let size = character.unicodeScalars.count
            guard count + size <= limit else { break }
            count += size
            end = text.index(after: end)
        }
        return String(text[..<end])
    }

    // MARK: - Patterns: each returns the end of its match anchored at `start`, or nil.

    /// The text with, for each position, where its run of base64 and of base64url characters
    /// ends (computed once, so no pattern rescans a long run from every position in it).
    struct Input {
        let s: [Unicode.Scalar]
        let base64RunEnd: [Int]
        let base64URLRunEnd: [Int]

        init(_ s: [Unicode.Scalar]) {
            self.s = s
            base64RunEnd = Self.runEnds(s) { isASCIIAlphanumeric($0) || $0 == "+" || $0 == "/" }
            base64URLRunEnd = Self.runEnds(s, isBase64URL)
        }

        static func runEnds(_ s: [Unicode.Scalar], _ member: (Unicode.Scalar) -> Bool) -> [Int] {
            var ends = [Int](repeating: 0, count: s.count + 1)
            ends[s.count] = s.count
            for i in s.indices.reversed() { ends[i] = member(s[i]) ? ends[i + 1] : i }
            return ends
        }
    }

    typealias Pattern = @Sendable (Input, Int) -> Int?

    static let patterns: [Pattern] = [
        keywordValue, bearer, longBase64, sessionToken, jwt, privateKeyHeader, prefixedToken, urlUserInfo,
    ]

    /// `(?i)(api[_-]?key|token|secret|password|credential)["']?\s*[:=]\s*["']?[\w-]+`
    static func keywordValue(_ input: Input, _ start: Int) -> Int? {
        let s = input.s
        var i: Int
        if let e = literal(s, start, "api", folding: true) {
            i = e
            if i < s.count, s[i] == "_" || s[i] == "-", literal(s, i + 1, "key", folding: true) != nil {
                i += 1
            }
            guard let k = literal(s, i, "key", folding: true) else { return nil }
            i = k
        } else if let e = ["token", "secret", "password", "credential"].lazy.compactMap({
            literal(s, start, $0, folding: true)
        }).first {
            i = e
        } else {
            return nil
        }
        if i < s.count, s[i] == "\"" || s[i] == "'" { i += 1 }
        i = skip(s, i, isSpace)
        guard i < s.count, s[i] == ":" || s[i] == "=" else { return nil }
        i = skip(s, i + 1, isSpace)
        if i < s.count, s[i] == "\"" || s[i] == "'" { i += 1 }
        let end = skip(s, i, isWordOrHyphen)
        return end > i ? end : nil
    }

    /// `(?i)bearer\s+[\w-]+`
    static func bearer(_ input: Input, _ start: Int) -> Int? {
        let s = input.s
        guard let e = literal(s, start, "bearer", folding: true) else { return nil }
        let word = skip(s, e, isSpace)
        guard word > e else { return nil }
        let end = skip(s, word, isWordOrHyphen)
        return end > word ? end : nil
    }

    /// `[A-Za-z0-9+/]{40,}={0,2}`
    static func longBase64(_ input: Input, _ start: Int) -> Int? {
        let s = input.s
        let run = input.base64RunEnd[start]
        guard run - start >= 40 else { return nil }
        var end = run
        while end < s.count, end < run + 2, s[end] == "=" { end += 1 }
        return end
    }

    /// `sess_[A-Za-z0-9_-]{43}`
    static func sessionToken(_ input: Input, _ start: Int) -> Int? {
        guard let e = literal(input.s, start, "sess_", folding: false), input.base64URLRunEnd[e] >= e + 43 else {
            return nil
        }
        return e + 43
    }

    /// `eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`
    static func jwt(_ input: Input, _ start: Int) -> Int? {
        let s = input.s
        guard let e = literal(s, start, "eyJ", folding: false) else { return nil }
        let first = input.base64URLRunEnd[e]
        guard first > e, first < s.count, s[first] == "." else { return nil }
        let second = input.base64URLRunEnd[first + 1]
        guard second > first + 1, second < s.count, s[second] == "." else { return nil }
        return input.base64URLRunEnd[second + 1]
    }

    /// `-----BEGIN [A-Z ]*PRIVATE KEY-----`
    static func privateKeyHeader(_ input: Input, _ start: Int) -> Int? {
        let s = input.s
        guard let e = literal(s, start, "-----BEGIN ", folding: false) else { return nil }
        // `[A-Z ]*` is greedy and "PRIVATE KEY" is made of its characters: the match can only
        // end where the run of [A-Z ] does, with "PRIVATE KEY" as its last 11 characters.
        let run = skip(s, e) { ("A"..."Z").contains($0) || $0 == " " }
        guard run - e >= 11, literal(s, run - 11, "PRIVATE KEY-----", folding: false) != nil else { return nil }
        return run + 5
    }

    /// A service's token format: one of `prefixes`, then at least `minimum` (and at most
    /// `maximum`) characters of `body`.
    struct TokenFormat: Sendable {
        let prefixes: [String]
        let body: @Sendable (Unicode.Scalar) -> Bool
        let minimum: Int
        var maximum = Int.max
    }

    /// GitHub, Stripe, AWS and Slack tokens (the type's documentation gives them as patterns).
    static let tokenFormats: [TokenFormat] = [
        TokenFormat(prefixes: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], body: isASCIIAlphanumeric, minimum: 36),
        TokenFormat(prefixes: ["github_pat_"], body: { isASCIIAlphanumeric($0) || $0 == "_" }, minimum: 22),
        TokenFormat(
            prefixes: ["sk_live_", "sk_test_", "rk_live_", "rk_test_"], body: isASCIIAlphanumeric, minimum: 16),
        TokenFormat(
            prefixes: ["AKIA", "ASIA"], body: { ("A"..."Z").contains($0) || ("0"..."9").contains($0) }, minimum: 16,
            maximum: 16),
        TokenFormat(
            prefixes: ["xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-"],
            body: { isASCIIAlphanumeric($0) || $0 == "-" }, minimum: 10),
    ]

    /// The longest match of any of ``tokenFormats`` at `start`.
    static func prefixedToken(_ input: Input, _ start: Int) -> Int? {
        let s = input.s
        var best: Int?
        for format in tokenFormats {
            for prefix in format.prefixes {
                guard let e = literal(s, start, prefix, folding: false) else { continue }
                let run = min(skip(s, e, format.body), e + min(format.maximum, s.count))
                if run - e >= format.minimum { best = max(best ?? run, run) }
            }
        }
        return best
    }

    /// `(?<=://)[^\s/?#@]+(?=@)`: a URL's user information (a name, or a name and a password).
    static func urlUserInfo(_ input: Input, _ start: Int) -> Int? {
        let s = input.s
        guard start >= 3, s[start - 3] == ":", s[start - 2] == "/", s[start - 1] == "/" else { return nil }
        let end = skip(s, start) { !isSpace($0) && !"/?#@".unicodeScalars.contains($0) }
        return end > start && end < s.count && s[end] == "@" ? end : nil
    }

    // MARK: - Character classes

    /// The end of `word` matched at `start` (ASCII; with `folding`, case-insensitive), or nil.
    static func literal(_ s: [Unicode.Scalar], _ start: Int, _ word: String, folding: Bool) -> Int? {
        var i = start
        for expected in word.unicodeScalars {
            guard i < s.count, folding ? foldedEqual(s[i], expected) : s[i] == expected else { return nil }
            i += 1
        }
        return i
    }

    /// Whether `scalar` matches the lowercase ASCII letter or symbol `expected` case-insensitively.
    static func foldedEqual(_ scalar: Unicode.Scalar, _ expected: Unicode.Scalar) -> Bool {
        if scalar == expected { return true }
        if ("a"..."z").contains(expected), scalar.value == expected.value - 0x20 { return true }
        switch expected {
        case "i": return scalar == "\u{130}" || scalar == "\u{131}"
        case "s": return scalar == "\u{17F}"
        case "k": return scalar == "\u{212A}"
        default: return false
        }
    }

    static func skip(_ s: [Unicode.Scalar], _ start: Int, _ matches: (Unicode.Scalar) -> Bool) -> Int {
        var i = start
        while i < s.count, matches(s[i]) { i += 1 }
        return i
    }

    static func isSpace(_ scalar: Unicode.Scalar) -> Bool { scalar.properties.isWhitespace }

    static func isWordOrHyphen(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == "-" || scalar == "_" || isASCIIAlphanumeric(scalar) { return true }
        if scalar.isASCII { return false }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber,
            .connectorPunctuation:
            return true
        default:
            return false
        }
    }

    static func isASCIIAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
    }

    static func isBase64URL(_ scalar: Unicode.Scalar) -> Bool {
        isASCIIAlphanumeric(scalar) || scalar == "-" || scalar == "_"
    }
}
