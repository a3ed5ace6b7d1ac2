internal import Crypto
import Foundation

/// Name-based UUIDs, version 5 (RFC 9562, section 5.5): the same namespace and name give the same
/// id on every device and in every process, so an id can be derived instead of stored.
///
/// ```text
/// uuid = SHA-1(namespace (16 raw bytes) || name) [0..<16], version nibble 5, variant bits 10
/// ```
/// SHA-1 here only names things (RFC 9562 chose it); nothing secret depends on it.
///
/// ```swift
/// let id = NameBasedUUID.v5(namespace: NameBasedUUID.dns, name: Array("www.example.com".utf8))
/// // 2ed6657d-e927-568b-95e1-2665a8aea6a2
/// ```
public enum NameBasedUUID {
    /// RFC 9562's namespace for DNS names, for checking against its example.
    public static let dns = UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8")!

    /// The version-5 UUID of `name` in `namespace`.
    ///
    /// - Parameters:
    ///   - namespace: The namespace id.
    ///   - name: The name's bytes (UTF-8 for text).
    /// - Returns: The id.
    public static func v5(namespace: UUID, name: [UInt8]) -> UUID {
        var hasher = Insecure.SHA1()
        hasher.update(data: withUnsafeBytes(of: namespace.uuid) { Array($0) })
        hasher.update(data: name)
        var bytes = Array(hasher.finalize().prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
