/// The lock-screen sanitiser (notifications.md): the one function that text passes through
/// before it may reach a lock screen (a live activity's operation and task, an approval's summary
/// when a device shows details).
///
/// ``sanitised(_:)`` is deterministic and works on Unicode scalars (code points):
/// 1. Every scalar inside a match of any of these patterns, tried at every position of the text,
///    is marked, in the text as given and again in the text without its control characters (so
///    a control character placed inside a secret cannot hide it):
///    - `(?i)(api[_-]?key|token|secret|password|credential)\s*[:=]\s*["']?[\w-]+`
///    - `(?i)bearer\s+[\w-]+`
///    - `[A-Za-z0-9+/]{40,}={0,2}`
///    - `sess_[A-Za-z0-9_-]{43}`
///    - `eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*` (a JWT)
///    - `-----BEGIN [A-Z ]*PRIVATE KEY-----`
///
///    Marking the union of all matches, rather than replacing pattern after pattern, makes the
///    result independent of the patterns' order: a JWT whose payload alone would match the
///    base64 pattern is still redacted whole, and `secret=` followed by base64 with a `+` in it
///    loses its whole value.
/// 2. Each maximal run of marked scalars (control characters inside it included) becomes one
///    `[REDACTED]`, and the control characters (general category Cc) are removed.
/// 3. The text is cut to at most ``maxLength`` scalars, at the last grapheme boundary that fits.
///
/// Character classes: `\s` is Unicode White_Space; `\w` is any letter (L*), mark (M*), number
/// (Nd, Nl, No), connector punctuation (Pc) or joiner (U+200C, U+200D), which covers both the
/// Unicode and Python readings of `\w`; `(?i)` folds ASCII letters and also lets `i` match `İ`
/// and `ı`, `s` match `ſ` and `k` match the Kelvin sign, as Python's `re` does.
public enum LockScreenText {
    /// The longest text that leaves the sanitiser, in Unicode scalars.
    public static let maxLength = 200
    /// What a redacted run becomes.
    public static let redaction = "[REDACTED]"

    /// `text` made safe for a lock screen (see the type's documentation).
    public static func sanitised(_ text: String) -> String {
        let original = Array(text.unicodeScalars)
        let isControl = original.map { $0.properties.generalCategory == .control }
        var marked = [Bool](repeating: false, count: original.count)
        for (start, end) in matches(in: Input(original)) {
            for i in start..<end { marked[i] = true }
        }
        if isControl.contains(true) {
            // The text without its control characters, read again: a control character inside a
            // secret must not hide it. Each match marks the original scalars it spans.
            let kept = original.indices.filter { !isControl[$0] }
            for (start, end) in matches(in: Input(kept.map { original[$0] })) {
                for i in kept[start]...kept[end - 1] { marked[i] = true }
            }
        }
        var out = String.UnicodeScalarView()
        var i = 0
        while i < original.count {
            if isControl[i] {
                i += 1
            } else if marked[i] {
                out.append(contentsOf: redaction.unicodeScalars)
                while i < original.count, marked[i] || isControl[i] { i += 1 }
            } else {
                out.append(original[i])
                i += 1
            }
        }
        return cut(String(out), to: maxLength)
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

    static let patterns: [Pattern] = [keywordValue, bearer, longBase64, sessionToken, jwt, privateKeyHeader]

    /// `(?i)(api[_-]?key|token|secret|password|credential)\s*[:=]\s*["']?[\w-]+`
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
        if scalar == "\u{200C}" || scalar == "\u{200D}" { return true }
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
