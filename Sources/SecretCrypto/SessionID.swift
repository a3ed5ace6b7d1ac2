import Foundation

/// A session id in the one form used for salts, filters and keys: the canonical lowercase,
/// hyphenated, 36-character UUID text.
///
/// A deployed iOS build salted with the uppercase form and could not decrypt; normalising at
/// the boundary makes that impossible here.
public struct SessionID: Sendable, Hashable, CustomStringConvertible, Codable {
    /// The canonical lowercase text.
    public let canonical: String

    /// Wraps a UUID.
    public init(_ uuid: UUID) {
        canonical = uuid.uuidString.lowercased()
    }

    /// Parses UUID text in any case.
    ///
    /// - Parameter text: A hyphenated UUID, upper or lower case.
    /// - Throws: ``CryptoError/invalidSessionID`` for anything else.
    public init(_ text: String) throws {
        guard text.utf8.count == 36, let uuid = UUID(uuidString: text) else { throw CryptoError.invalidSessionID }
        self.init(uuid)
    }

    /// The session as a UUID.
    public var uuid: UUID { UUID(uuidString: canonical)! }

    public var description: String { canonical }

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        try self.init(container.decode(String.self))
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(canonical)
    }
}
