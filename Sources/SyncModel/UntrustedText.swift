import Foundation

extension String {
    /// This text with every control character written out as `\u{XX}`, so text that came from
    /// elsewhere (a device name, a server's error message) cannot move the cursor, recolour or
    /// retitle a terminal, or forge a line: C0 controls except tab and line feed, DEL, C1
    /// controls, the line and paragraph separators and the bidirectional overrides and isolates.
    public var escapingControlCharacters: String {
        guard unicodeScalars.contains(where: Self.isUnsafe) else { return self }
        var out = ""
        for scalar in unicodeScalars {
            if Self.isUnsafe(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A: false
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: true
        default: false
        }
    }
}

/// A git remote URL as it may be stored, printed and sent: without credentials.
///
/// `https://user:token@host/org/repo.git?private_token=x` becomes `https://host/org/repo.git`:
/// the userinfo, the query and the fragment are dropped (tokens travel in all three). The
/// scp-like form `git@host:org/repo.git` keeps its user name, which names an ssh account and
/// carries no secret; only a query-like tail is dropped there.
public enum RemoteURL {
    /// `text` without userinfo, query or fragment.
    public static func redacted(_ text: String) -> String {
        var rest = Substring(text)
        if let cut = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<cut] }
        guard let scheme = rest.range(of: "://") else { return String(rest) }
        let authorityStart = scheme.upperBound
        let authorityEnd = rest[authorityStart...].firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[authorityStart..<authorityEnd]
        guard let at = authority.lastIndex(of: "@") else { return String(rest) }
        return String(rest[..<authorityStart]) + String(rest[rest.index(after: at)...])
    }
}
