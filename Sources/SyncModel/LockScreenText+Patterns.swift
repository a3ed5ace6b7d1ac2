extension LockScreenText {
    /// Marks as a difference array: each rule adds its ranges in constant time.
    struct Marks {
        private var cover: [Int]

        init(count: Int) { cover = [Int](repeating: 0, count: count + 1) }

        mutating func mark(_ start: Int, _ end: Int) {
            guard end > start else { return }
            cover[start] += 1
            cover[end] -= 1
        }

        var marked: [Bool] {
            var depth = 0
            return cover.dropLast().map {
                depth += $0
                return depth > 0
            }
        }
    }

    /// Every scalar of `input` that a rule's match covers (notifications.md, step 4).
    static func marks(in input: Input) -> [Bool] {
        var marks = Marks(count: input.s.count)
        let commitWordEnds = markIdentifierRules(input, &marks)
        markRuns(input, commitContext(input, commitWordEnds: commitWordEnds), &marks)
        for start in input.s.indices {
            for pattern in anchoredPatterns {
                if let end = pattern(input, start) { marks.mark(start, end) }
            }
        }
        return marks.marked
    }

    typealias Pattern = @Sendable (Input, Int) -> Int?

    /// The rules tried at every position; each returns the end of its match there, or nil.
    static let anchoredPatterns: [Pattern] = [bearer, sessionToken, jwt, privateKeyHeader, prefixedToken, urlUserInfo]

    /// Long base64 runs (at least 40, with up to two `=`) and bare hex runs (exactly 32 in a run of
    /// `[A-Za-z0-9_]`), unless a run is a commit id (`context` says where a commit word's context
    /// ends) or, for base64, a path.
    static func markRuns(_ input: Input, _ context: [Bool], _ marks: inout Marks) {
        let s = input.s
        func isCommitID(_ start: Int, _ end: Int) -> Bool {
            (7...40).contains(end - start) && input.hexEnd[start] >= end && context[start]
        }
        var i = 0
        while i < s.count {
            let end = input.base64End[i]
            guard end > i else {
                i += 1
                continue
            }
            if end - i >= 40, !isCommitID(i, end), !isPath(s[i..<end]) {
                var padded = end
                while padded < s.count, padded < end + 2, s[padded] == "=" { padded += 1 }
                marks.mark(i, padded)
            }
            i = end
        }
        i = 0
        while i < s.count {
            let end = input.wordCharEnd[i]
            guard end > i else {
                i += 1
                continue
            }
            if end - i == 32, input.hexEnd[i] >= end, !isCommitID(i, end) { marks.mark(i, end) }
            i = end
        }
    }

    /// Whether a base64 run is a path: it holds a `/`, no `+`, and lacks an upper-case letter, a
    /// lower-case letter or a digit.
    static func isPath(_ run: ArraySlice<Unicode.Scalar>) -> Bool {
        guard run.contains("/"), !run.contains("+") else { return false }
        return !(run.contains(where: isUpper) && run.contains(where: isLower) && run.contains(where: isDigit))
    }

    /// `(?i)bearer\s+\S+`
    static func bearer(_ input: Input, _ start: Int) -> Int? {
        guard let e = literal(input.s, start, "bearer", folding: true) else { return nil }
        let word = input.spaceEnd[e]
        guard word > e, word < input.s.count else { return nil }
        return input.wordEnd[word]
    }

    /// `sess_[A-Za-z0-9_-]{43}`
    static func sessionToken(_ input: Input, _ start: Int) -> Int? {
        guard let e = literal(input.s, start, "sess_"), input.base64URLEnd[e] >= e + 43 else { return nil }
        return e + 43
    }

    /// `eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`
    static func jwt(_ input: Input, _ start: Int) -> Int? {
        let s = input.s
        guard let e = literal(s, start, "eyJ") else { return nil }
        let first = input.base64URLEnd[e]
        guard first > e, first < s.count, s[first] == "." else { return nil }
        let second = input.base64URLEnd[first + 1]
        guard second > first + 1, second < s.count, s[second] == "." else { return nil }
        return input.base64URLEnd[second + 1]
    }

    /// `-----BEGIN [A-Z ]*PRIVATE KEY[A-Z ]*-----`: the run of `[A-Z ]` after `-----BEGIN ` holds
    /// `PRIVATE KEY` and is followed by `-----`. (Runs after different headers never overlap.)
    static func privateKeyHeader(_ input: Input, _ start: Int) -> Int? {
        let s = input.s
        guard let e = literal(s, start, "-----BEGIN ") else { return nil }
        var run = e
        while run < s.count, isUpper(s[run]) || s[run] == " " { run += 1 }
        guard let end = literal(s, run, "-----"), (e..<run).contains(where: { literal(s, $0, "PRIVATE KEY") != nil })
        else { return nil }
        return end
    }

    /// `(?<=://)` up to the last `@` of the word, when the part before its first `:` holds no
    /// `/`, `?` or `#`: a URL's user information (a name, or a name and a password).
    static func urlUserInfo(_ input: Input, _ start: Int) -> Int? {
        let s = input.s
        guard start >= 3, s[start - 3] == ":", s[start - 2] == "/", s[start - 1] == "/" else { return nil }
        let at = input.lastAtInWord[start]
        guard at > start, input.nextPathMark[start] >= min(input.nextColon[start], at) else { return nil }
        return at
    }
}
