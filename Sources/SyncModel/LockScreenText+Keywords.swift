extension LockScreenText {
    /// Components that make an identifier a keyword identifier when one ends with them.
    static let keywords = [
        "password", "passwd", "pwd", "passphrase", "secret", "token", "credential", "credentials", "apikey",
        "accesskey", "privatekey", "auth", "authorization", "cookie",
    ]
    /// Components that, followed by the component `key`, make a keyword identifier (`api_key`).
    static let keyOwners = ["api", "access", "private"]
    /// First words of a value that take the next word too (`Authorization: Basic …`).
    static let schemes: Set<String> = ["basic", "bearer", "token", "digest", "negotiate"]
    /// Options whose value, when it holds a `:`, is a user and a password (curl's `-u`).
    static let userOptions: Set<String> = ["-u", "-U", "--user", "--proxy-user"]
    /// Words before a commit id (a hex run after one is not redacted).
    static let commitWords: Set<String> = [
        "commit", "checkout", "revert", "cherry-pick", "rebase", "reset", "sha", "sha1", "head", "show", "merge",
        "fixup", "squash",
    ]

    enum KeywordStrength { case none, weak, strong }

    /// The keyword rules that start at an identifier (a keyword and its value, an option and its
    /// value, a user option, a MySQL `-p` password), each identifier visited once. Returns where
    /// commit words end.
    static func markIdentifierRules(_ input: Input, _ marks: inout Marks) -> [Bool] {
        let s = input.s
        var commitWordEnds = [Bool](repeating: false, count: s.count + 1)
        var mysqlEnd: Int?
        var i = 0
        while i < s.count {
            let end = input.identifierEnd[i]
            guard end > i else {
                i += 1
                continue
            }
            let text = lowercased(s, i..<end)
            let strength = keywordStrength(s[i..<end])
            if strength != .none, let e = keywordValueEnd(input, after: end, weak: strength == .weak) {
                marks.mark(i, e)
            }
            if strength != .none, s[i] == "-", input.spaceEnd[end] > end,
                let e = valueEnd(input, at: input.spaceEnd[end])
            {
                marks.mark(i, e)
            }
            if userOptions.contains(String(String.UnicodeScalarView(s[i..<end]))),
                let e = userValueEnd(input, after: end)
            {
                marks.mark(i, e)
            }
            if mysqlEnd == nil, text.hasPrefix("mysql") || text.hasPrefix("mariadb") { mysqlEnd = end }
            if commitWords.contains(text) { commitWordEnds[end] = true }
            i = end
        }
        if let mysqlEnd { markMySQLPasswords(input, after: mysqlEnd, &marks) }
        return commitWordEnds
    }

    /// The components of an identifier, in lower case: split at `_`, `-` and `.`, between a
    /// lower-case and an upper-case letter, before the last of two or more upper-case letters
    /// followed by a lower-case one, and between a letter and a digit.
    static func components(_ identifier: ArraySlice<Unicode.Scalar>) -> [String] {
        var parts: [String] = []
        var current = String.UnicodeScalarView()
        var previous: Unicode.Scalar?
        for (k, c) in zip(identifier.indices, identifier) {
            if c == "_" || c == "-" || c == "." {
                if !current.isEmpty { parts.append(String(current)) }
                current = String.UnicodeScalarView()
                previous = nil
                continue
            }
            if let p = previous {
                let next = k + 1 < identifier.endIndex ? identifier[k + 1] : nil
                let split =
                    (isLower(p) && isUpper(c)) || (isDigit(p) != isDigit(c))
                    || (isUpper(p) && isUpper(c) && next.map(isLower) == true)
                if split {
                    parts.append(String(current))
                    current = String.UnicodeScalarView()
                }
            }
            current.append(lowercased(c))
            previous = c
        }
        if !current.isEmpty { parts.append(String(current)) }
        return parts
    }

    /// Strong when a component, or a part between `_`, `-` and `.` (`SeCrEt`, `PassWord`), ends
    /// with one of ``keywords``, or a component ends with one of ``keyOwners`` and the next is
    /// `key`; weak when only `pass` ends one.
    static func keywordStrength(_ identifier: ArraySlice<Unicode.Scalar>) -> KeywordStrength {
        let parts = components(identifier)
        let wholeParts = identifier.split { $0 == "_" || $0 == "-" || $0 == "." }.map {
            String(String.UnicodeScalarView($0.map(lowercased)))
        }
        var weak = false
        for (k, part) in parts.enumerated() {
            if k + 1 < parts.count, parts[k + 1] == "key", keyOwners.contains(where: { part.hasSuffix($0) }) {
                return .strong
            }
        }
        for part in parts + wholeParts {
            if keywords.contains(where: { part.hasSuffix($0) }) { return .strong }
            if part.hasSuffix("pass") { weak = true }
        }
        return weak ? .weak : .none
    }

    /// After a keyword identifier ending at `end`: an optional quote, `\s*`, a separator (`:`,
    /// `=`, `%3A`, `%3D`; only the `=` ones when `weak`), any run of `:=>`, `\s*`, then a value.
    static func keywordValueEnd(_ input: Input, after end: Int, weak: Bool) -> Int? {
        let s = input.s
        var p = end
        if p < s.count, isQuote(s[p]) { p += 1 }
        p = input.spaceEnd[p]
        guard p < s.count else { return nil }
        if s[p] == "=" || (!weak && s[p] == ":") {
            p += 1
        } else if p + 2 < s.count, s[p] == "%", s[p + 1] == "3",
            "Dd".unicodeScalars.contains(s[p + 2])
                || (!weak && "Aa".unicodeScalars.contains(s[p + 2]))
        {
            p += 3
        } else {
            return nil
        }
        while p < s.count, s[p] == ":" || s[p] == "=" || s[p] == ">" { p += 1 }
        return valueEnd(input, at: input.spaceEnd[p])
    }

    /// The end of the value at `start` (notifications.md): a quoted string to its closing quote
    /// (or the end), or a word, with the word after a scheme and the words after each `;`.
    static func valueEnd(_ input: Input, at start: Int) -> Int? {
        let s = input.s
        guard start < s.count else { return nil }
        if isQuote(s[start]) {
            let close = input.next(quote: s[start], from: start + 1)
            return close > start + 1 ? close : nil
        }
        let first = input.wordEnd[start]
        var last = start
        if first - start <= 9, schemes.contains(lowercased(s, start..<first)), input.spaceEnd[first] < s.count {
            last = input.spaceEnd[first]
        }
        return input.chainEnd[last]
    }

    /// After a user option ending at `end`: `=` or `\s+`, then a word holding a `:`.
    static func userValueEnd(_ input: Input, after end: Int) -> Int? {
        let s = input.s
        guard end < s.count else { return nil }
        let word = s[end] == "=" ? end + 1 : input.spaceEnd[end]
        guard word > end, word < s.count else { return nil }
        let wordEnd = input.wordEnd[word]
        return wordEnd > word && input.nextColon[word] < wordEnd ? wordEnd : nil
    }

    /// Every word after `start` that starts with `-p` and has more after it.
    static func markMySQLPasswords(_ input: Input, after start: Int, _ marks: inout Marks) {
        let s = input.s
        for w in start..<s.count where s[w] == "-" && (w == 0 || isSpace(s[w - 1])) {
            if w + 1 < s.count, s[w + 1] == "p", input.wordEnd[w] > w + 2 { marks.mark(w, input.wordEnd[w]) }
        }
    }

    /// Where the text before a position ends with a commit word's context:
    /// `commitWord(\s+-\S*)*[\s:=#(\['"`]*`, computed left to right in one pass.
    static func commitContext(_ input: Input, commitWordEnds: [Bool]) -> [Bool] {
        let s = input.s
        var afterWord = commitWordEnds // ends with a commit word and option words
        var context = [Bool](repeating: false, count: s.count + 1)
        for p in 0...s.count {
            if afterWord[p] {
                let dash = input.spaceEnd[p]
                if dash > p, dash < s.count, s[dash] == "-" {
                    for q in (dash + 1)...input.wordEnd[dash] { afterWord[q] = true }
                }
            }
            context[p] = afterWord[p] || (p > 0 && context[p - 1] && isContextSeparator(s[p - 1]))
        }
        return context
    }

    static func isContextSeparator(_ scalar: Unicode.Scalar) -> Bool {
        isSpace(scalar) || ":=#([\"'`".unicodeScalars.contains(scalar)
    }
}
