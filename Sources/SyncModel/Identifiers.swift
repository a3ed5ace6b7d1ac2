import Foundation

extension UUID {
    /// The canonical lowercase, hyphenated, 36-character text used on the wire, in salts, in
    /// filters and in local keys.
    ///
    /// Foundation's `uuidString` is uppercase; deployed clients that used it failed to match
    /// lowercase rows and derived the wrong HKDF salt.
    public var canonical: String { uuidString.lowercased() }

    /// Parses UUID text in any case.
    ///
    /// - Parameter text: A hyphenated UUID, upper, lower or mixed case.
    /// - Returns: The UUID, or `nil` when `text` is not one.
    public static func parse(_ text: some StringProtocol) -> UUID? {
        text.utf8.count == 36 ? UUID(uuidString: String(text)) : nil
    }
}
