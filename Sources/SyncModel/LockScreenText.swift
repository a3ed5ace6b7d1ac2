import Foundation

/// The lock-screen sanitiser (notifications.md, "The lock-screen sanitiser", which defines it
/// exactly): the one function that text passes through before it may reach a lock screen (a live
/// activity's operation and task, an approval's summary when a device shows details).
///
/// ``sanitised(_:)`` is deterministic, works on Unicode scalars (code points) and takes time linear
/// in at most ``window`` scalars, however long the text:
/// 1. **The window**: only the first ``window`` scalars are read; when the text is longer, what
///    follows the last visible White_Space among them (the word the cut may have split) is marked.
/// 2. **Hidden characters** (general category Cc or Cf, U+2028, U+2029, and the other
///    Default_Ignorable code points: ``invisibleRanges``) are never shown, and they cannot hide a
///    secret: the rules are matched in two views of the window, one without its hidden characters
///    that are not White_Space (a tab still separates `bearer` from its token), one without any
///    hidden character (a zero-width space or a newline inside a secret does not split it).
/// 3. **Matching form**: in each view, every scalar is replaced by its own NFKC form and then by
///    ``confusables`` (fullwidth `ＰＡＳＳＷＯＲＤ` and Armenian `passwօrd` read `PASSWORD` and
///    `password`; `∶` reads `:`). A match marks the original scalars it came from.
/// 4. Every match of every rule is marked: a keyword identifier (`DB_PASSWORD`, `accessToken`)
///    with a separator and its value, an option and its value (`--password X`, `-u user:X`,
///    `mysql … -pX`), `bearer` and a word, URL user information, long base64 runs and bare 32-digit
///    hex runs (except commit ids after `commit`-like words and paths), and the common token
///    formats (GitHub, Stripe, AWS, Slack, Google, npm, GitLab, Twilio, OpenAI, Anthropic, JWTs,
///    private-key headers, session secrets).
/// 5. Each maximal run of marked scalars (hidden characters inside it included) becomes one
///    `[REDACTED]`, and every hidden character is removed.
/// 6. The text is cut to at most ``maxLength`` scalars, at the last grapheme boundary that fits.
public enum LockScreenText {
    /// The longest text that leaves the sanitiser, in Unicode scalars.
    public static let maxLength = 200
    /// How many of a text's scalars the sanitiser reads (4 × ``maxLength``).
    public static let window = 4 * maxLength
    /// What a redacted run becomes.
    public static let redaction = "[REDACTED]"

    /// `text` made safe for a lock screen (see the type's documentation).
    public static func sanitised(_ text: String) -> String {
        var original = Array(text.unicodeScalars.prefix(window + 1))
        let longer = original.count > window
        if longer { original.removeLast() }
        let hidden = original.map(isHidden)
        var marked = [Bool](repeating: false, count: original.count)
        func mark(droppingHiddenWhitespace: Bool) {
            let view = MatchingView(original) {
                hidden[$0] && (droppingHiddenWhitespace || !original[$0].properties.isWhitespace)
            }
            for (j, isMarked) in marks(in: view.input).enumerated() where isMarked { marked[view.origin[j]] = true }
        }
        mark(droppingHiddenWhitespace: false)
        if original.indices.contains(where: { hidden[$0] && original[$0].properties.isWhitespace }) {
            mark(droppingHiddenWhitespace: true)
        }
        if longer {
            let lastSpace = original.indices.last { !hidden[$0] && original[$0].properties.isWhitespace }
            for i in (lastSpace.map { $0 + 1 } ?? 0)..<original.count { marked[i] = true }
        }
        var out = String.UnicodeScalarView()
        var i = 0
        while i < original.count {
            if marked[i] {
                out.append(contentsOf: redaction.unicodeScalars)
                while i < original.count, marked[i] || hidden[i] { i += 1 }
            } else if hidden[i] {
                i += 1
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
}
