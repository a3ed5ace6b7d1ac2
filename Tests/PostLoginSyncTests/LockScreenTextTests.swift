import SyncModel
import Testing

/// The lock-screen sanitiser on long text (notifications.md, "Why the window is safe"). Its
/// exact outputs are the vector file's; its time on 100,000 scalars is a benchmark
/// (`sync-vectors bench`), not a test.
@Suite("Lock-screen sanitiser")
struct LockScreenTextTests {
    /// The inputs that took a minute before the window (every start rescanned the run after it).
    @Test(arguments: ["AKIA", "xoxb-", "a", "token=", "\u{200B}", "https://", "commit "])
    func oneHundredThousandScalarsOfARepeatedPieceReturn(piece: String) {
        let count = 100_000 / piece.unicodeScalars.count
        let out = LockScreenText.sanitised(String(repeating: piece, count: count))
        #expect(out.unicodeScalars.count <= LockScreenText.maxLength)
    }

    @Test func aRepeatedKeyIDIsOneRedaction() {
        #expect(LockScreenText.sanitised(String(repeating: "AKIA", count: 25_000)) == LockScreenText.redaction)
        #expect(LockScreenText.sanitised(String(repeating: "xoxb-", count: 20_000)) == LockScreenText.redaction)
    }

    /// A secret that the window's end cuts is never shown in part: whatever the offset, nothing
    /// of it appears, and what comes before it is the whole text's result.
    @Test func aSecretStraddlingTheWindowIsNotShownInPart() {
        let secret = "AKIAIOSFODNN7EXAMPLE"
        for offset in (LockScreenText.window - 30)...(LockScreenText.window + 5) {
            let head = "a token=" + String(repeating: "x", count: offset - 9) + " "
            let out = LockScreenText.sanitised(head + secret + " end")
            #expect(out.hasPrefix("a [REDACTED]"))
            #expect(!out.contains("AKI"), "offset \(offset)")
        }
    }
}
