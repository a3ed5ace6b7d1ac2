extension LockScreenText {
    /// One view in its matching form, with what the rules look up in constant time, computed once:
    /// where the run of each character class that starts at a position ends, where the next quote,
    /// colon or path mark is, and the last `@` of each word. No rule rescans a run from every
    /// position in it, so matching takes time linear in the view.
    struct Input {
        let s: [Unicode.Scalar]
        /// Ends of runs of White_Space, of words (not White_Space), of identifier scalars
        /// `[A-Za-z0-9_.-]`, of `[A-Za-z0-9_]`, base64 `[A-Za-z0-9+/]`, base64url
        /// `[A-Za-z0-9_-]` and hex digits.
        let spaceEnd, wordEnd, identifierEnd, wordCharEnd, base64End, base64URLEnd, hexEnd: [Int]
        /// Where each token format's body ends.
        let alphanumericEnd, alphanumericHyphenEnd, upperDigitEnd, lowerHexEnd: [Int]
        /// The next `"`, `'`, `` ` ``, `:`, and one of `/?#`, at or after a position (`s.count`: none).
        let nextDoubleQuote, nextSingleQuote, nextBacktick, nextColon, nextPathMark: [Int]
        /// The last `@` in the rest of the word at a position, or -1.
        let lastAtInWord: [Int]
        /// Where a value that starts a word at a position ends: its word, and while that ends in
        /// `;` and another word follows after white space, that word too.
        let chainEnd: [Int]

        init(_ s: [Unicode.Scalar]) {
            self.s = s
            spaceEnd = Self.runEnds(s, isSpace)
            wordEnd = Self.runEnds(s) { !isSpace($0) }
            identifierEnd = Self.runEnds(s, isIdentifier)
            wordCharEnd = Self.runEnds(s) { isASCIIAlphanumeric($0) || $0 == "_" }
            base64End = Self.runEnds(s, isBase64)
            base64URLEnd = Self.runEnds(s, isBase64URL)
            hexEnd = Self.runEnds(s, isHex)
            alphanumericEnd = Self.runEnds(s, isASCIIAlphanumeric)
            alphanumericHyphenEnd = Self.runEnds(s) { isASCIIAlphanumeric($0) || $0 == "-" }
            upperDigitEnd = Self.runEnds(s) { isUpper($0) || isDigit($0) }
            lowerHexEnd = Self.runEnds(s) { isDigit($0) || ("a"..."f").contains($0) }
            nextDoubleQuote = Self.nextIndex(s) { $0 == "\"" }
            nextSingleQuote = Self.nextIndex(s) { $0 == "'" }
            nextBacktick = Self.nextIndex(s) { $0 == "`" }
            nextColon = Self.nextIndex(s) { $0 == ":" }
            nextPathMark = Self.nextIndex(s) { $0 == "/" || $0 == "?" || $0 == "#" }
            var last = [Int](repeating: -1, count: s.count + 1)
            var chain = [Int](repeating: s.count, count: s.count + 1)
            for i in s.indices.reversed() where !isSpace(s[i]) {
                last[i] = last[i + 1] >= 0 ? last[i + 1] : (s[i] == "@" ? i : -1)
                let end = wordEnd[i]
                let next = spaceEnd[end]
                chain[i] = s[end - 1] == ";" && next < s.count ? chain[next] : end
            }
            lastAtInWord = last
            chainEnd = chain
        }

        /// The next `quote` at or after `start`, or `s.count`.
        func next(quote: Unicode.Scalar, from start: Int) -> Int {
            switch quote {
            case "\"": return nextDoubleQuote[start]
            case "'": return nextSingleQuote[start]
            default: return nextBacktick[start]
            }
        }

        static func runEnds(_ s: [Unicode.Scalar], _ member: (Unicode.Scalar) -> Bool) -> [Int] {
            var ends = [Int](repeating: s.count, count: s.count + 1)
            for i in s.indices.reversed() { ends[i] = member(s[i]) ? ends[i + 1] : i }
            return ends
        }

        static func nextIndex(_ s: [Unicode.Scalar], _ member: (Unicode.Scalar) -> Bool) -> [Int] {
            var next = [Int](repeating: s.count, count: s.count + 1)
            for i in s.indices.reversed() { next[i] = member(s[i]) ? i : next[i + 1] }
            return next
        }
    }

    // MARK: - Character classes

    /// The end of `word` matched at `start` (`word` is ASCII; with `folding`, ASCII letters match
    /// in either case), or nil.
    static func literal(_ s: [Unicode.Scalar], _ start: Int, _ word: String, folding: Bool = false) -> Int? {
        var i = start
        for expected in word.unicodeScalars {
            guard i < s.count, s[i] == expected || (folding && lowercased(s[i]) == expected) else { return nil }
            i += 1
        }
        return i
    }

    /// `scalar` with an ASCII upper-case letter made lower-case.
    static func lowercased(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        isUpper(scalar) ? Unicode.Scalar(scalar.value + 0x20)! : scalar
    }

    /// `s[range]` as a string, ASCII letters in lower case.
    static func lowercased(_ s: [Unicode.Scalar], _ range: Range<Int>) -> String {
        var out = String.UnicodeScalarView()
        for i in range { out.append(lowercased(s[i])) }
        return String(out)
    }

    static func isSpace(_ scalar: Unicode.Scalar) -> Bool { scalar.properties.isWhitespace }
    static func isUpper(_ scalar: Unicode.Scalar) -> Bool { ("A"..."Z").contains(scalar) }
    static func isLower(_ scalar: Unicode.Scalar) -> Bool { ("a"..."z").contains(scalar) }
    static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }
    static func isQuote(_ scalar: Unicode.Scalar) -> Bool { scalar == "\"" || scalar == "'" || scalar == "`" }

    static func isASCIIAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        isLower(scalar) || isUpper(scalar) || isDigit(scalar)
    }

    static func isIdentifier(_ scalar: Unicode.Scalar) -> Bool {
        isASCIIAlphanumeric(scalar) || scalar == "_" || scalar == "-" || scalar == "."
    }

    static func isBase64(_ scalar: Unicode.Scalar) -> Bool {
        isASCIIAlphanumeric(scalar) || scalar == "+" || scalar == "/"
    }

    static func isBase64URL(_ scalar: Unicode.Scalar) -> Bool {
        isASCIIAlphanumeric(scalar) || scalar == "-" || scalar == "_"
    }

    static func isHex(_ scalar: Unicode.Scalar) -> Bool {
        isDigit(scalar) || ("a"..."f").contains(scalar) || ("A"..."F").contains(scalar)
    }
}
