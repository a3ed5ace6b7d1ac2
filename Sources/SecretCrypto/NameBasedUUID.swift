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
        var bytes = Array(sha1(withUnsafeBytes(of: namespace.uuid) { Array($0) } + name).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}

extension NameBasedUUID {
    /// SHA-1 (RFC 3174) of `message`: 20 bytes. Written out here because libsodium has none and
    /// the product links swift-crypto on Linux only when asked (Package.swift); the tests check it
    /// against RFC 3174's examples and swift-crypto's `Insecure.SHA1`.
    static func sha1(_ message: [UInt8]) -> [UInt8] {
        var state: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        var padded = message + [0x80]
        padded += [UInt8](repeating: 0, count: (56 - padded.count % 64 + 64) % 64)
        padded += (0..<8).reversed().map { UInt8(truncatingIfNeeded: (UInt64(message.count) &* 8) >> ($0 * 8)) }
        var w = [UInt32](repeating: 0, count: 80)
        for block in stride(from: 0, to: padded.count, by: 64) {
            for t in 0..<16 {
                w[t] = (0..<4).reduce(0) { $0 << 8 | UInt32(padded[block + t * 4 + $1]) }
            }
            for t in 16..<80 {
                let x = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16]
                w[t] = x << 1 | x >> 31
            }
            var (a, b, c, d, e) = (state[0], state[1], state[2], state[3], state[4])
            for t in 0..<80 {
                let (f, k): (UInt32, UInt32) =
                    switch t {
                    case 0..<20: ((b & c) | (~b & d), 0x5A82_7999)
                    case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
                    case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                    default: (b ^ c ^ d, 0xCA62_C1D6)
                    }
                let temp = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[t]
                (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, temp)
            }
            state = [state[0] &+ a, state[1] &+ b, state[2] &+ c, state[3] &+ d, state[4] &+ e]
        }
        return state.flatMap { word in (0..<4).reversed().map { UInt8(truncatingIfNeeded: word >> ($0 * 8)) } }
    }
}
