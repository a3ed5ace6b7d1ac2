extension LockScreenText {
    /// A service's token format: one of `prefixes`, then at least `minimum` (and at most `maximum`)
    /// characters of the body class (`bodyEnd` says where its run ends). With `wordStart`, the
    /// scalar before the prefix must not be `[A-Za-z0-9_-]` (`risk-assessment-…` holds no `sk-`
    /// key).
    struct TokenFormat: Sendable {
        let prefixes: [String]
        let bodyEnd: @Sendable (Input) -> [Int]
        let minimum: Int
        var maximum = Int.max
        var wordStart = false
    }

    /// GitHub, Stripe, AWS, Slack, Google, npm, GitLab, Twilio, OpenAI and Anthropic tokens
    /// (docs/notifications.md gives them as patterns).
    static let tokenFormats: [TokenFormat] = [
        TokenFormat(prefixes: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], bodyEnd: \.alphanumericEnd, minimum: 36),
        TokenFormat(prefixes: ["github_pat_"], bodyEnd: \.wordCharEnd, minimum: 22),
        TokenFormat(
            prefixes: ["sk_live_", "sk_test_", "rk_live_", "rk_test_"], bodyEnd: \.alphanumericEnd, minimum: 16),
        TokenFormat(prefixes: ["AKIA", "ASIA"], bodyEnd: \.upperDigitEnd, minimum: 16, maximum: 16),
        TokenFormat(
            prefixes: ["xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-"], bodyEnd: \.alphanumericHyphenEnd,
            minimum: 10),
        TokenFormat(prefixes: ["AIza"], bodyEnd: \.base64URLEnd, minimum: 35, maximum: 35),
        TokenFormat(prefixes: ["npm_"], bodyEnd: \.alphanumericEnd, minimum: 36, maximum: 36),
        TokenFormat(prefixes: ["glpat-"], bodyEnd: \.base64URLEnd, minimum: 20),
        TokenFormat(prefixes: ["SK"], bodyEnd: \.lowerHexEnd, minimum: 32, maximum: 32),
        TokenFormat(prefixes: ["sk-proj-", "sk-ant-"], bodyEnd: \.base64URLEnd, minimum: 20, wordStart: true),
        TokenFormat(prefixes: ["sk-"], bodyEnd: \.base64URLEnd, minimum: 32, wordStart: true),
    ]

    /// The longest match of any of ``tokenFormats`` at `start`: the body's run end comes from the
    /// view's precomputed run ends, so no position rescans a body.
    static func prefixedToken(_ input: Input, _ start: Int) -> Int? {
        let s = input.s
        var best: Int?
        for format in tokenFormats {
            if format.wordStart, start > 0, isBase64URL(s[start - 1]) { continue }
            for prefix in format.prefixes {
                guard let e = literal(s, start, prefix) else { continue }
                let run = format.bodyEnd(input)[e]
                guard run - e >= format.minimum else { continue }
                let end = min(run, e + min(format.maximum, s.count))
                best = max(best ?? end, end)
            }
        }
        return best
    }
}
