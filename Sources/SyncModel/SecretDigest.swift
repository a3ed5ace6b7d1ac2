import Foundation

/// The digest a push compares instead of listing every envelope pair (sync.md, "Reconciliation
/// that scales"): the user's envelope rows of one owner device's sessions, in buckets by session.
///
/// ```
/// bucket(session_id) = (first two bytes of MD5(lowercase session_id text), big-endian) mod buckets
/// row_hash           = MD5(session_id || ':' || device_id || ':' || ephemeral_public_key)
/// h1, h2             = XOR over the bucket's rows of row_hash bytes 0-7 and 8-15, as signed int8
/// ```
///
/// MD5 is a checksum here, not a defence: the digest only tells the pusher which buckets to list.
public struct DigestBucket: Sendable, Hashable, Codable {
    public var bucket: Int
    public var pairs: Int
    public var h1: Int64
    public var h2: Int64

    /// Creates a bucket's digest.
    public init(bucket: Int, pairs: Int = 0, h1: Int64 = 0, h2: Int64 = 0) {
        self.bucket = bucket
        self.pairs = pairs
        self.h1 = h1
        self.h2 = h2
    }

    /// Adds one row.
    public mutating func add(_ hash: (Int64, Int64)) {
        pairs += 1
        h1 ^= hash.0
        h2 ^= hash.1
    }
}

/// The digest's functions, the same on the pusher and on both remotes.
public enum SecretDigest {
    /// The bucket count a push asks for: a power of two, at most 65,536.
    public static func bucketCount(forPairs pairs: Int) -> Int {
        // About 16 rows a bucket: a difference costs listing ~16 rows, and the digest stays small.
        var buckets = 1
        while buckets < 65_536 && buckets * 16 < pairs { buckets *= 2 }
        return buckets
    }

    /// Whether `buckets` is a power of two from 1 to 65,536.
    public static func isValidBucketCount(_ buckets: Int) -> Bool {
        (1...65_536).contains(buckets) && buckets & (buckets - 1) == 0
    }

    /// The bucket of a session.
    public static func bucket(of sessionID: UUID, buckets: Int) -> Int {
        let hash = MD5.hash(Array(sessionID.canonical.utf8))
        return (Int(hash[0]) << 8 | Int(hash[1])) % buckets
    }

    /// `row_hash` as (h1, h2).
    public static func rowHash(sessionID: String, deviceID: String, ephemeralPublicKey: String) -> (Int64, Int64) {
        let hash = MD5.hash(Array((sessionID + ":" + deviceID + ":" + ephemeralPublicKey).utf8))
        var h1: UInt64 = 0, h2: UInt64 = 0
        for index in 0..<8 {
            h1 = h1 << 8 | UInt64(hash[index])
            h2 = h2 << 8 | UInt64(hash[index + 8])
        }
        return (Int64(bitPattern: h1), Int64(bitPattern: h2))
    }

    /// The digest of rows given as (session id, device id text, ephemeral public key), keyed by bucket.
    public static func digest(_ rows: some Sequence<(UUID, String, String)>, buckets: Int) -> [Int: DigestBucket] {
        var result: [Int: DigestBucket] = [:]
        for (session, device, key) in rows {
            let bucket = bucket(of: session, buckets: buckets)
            result[bucket, default: DigestBucket(bucket: bucket)].add(rowHash(sessionID: session.canonical, deviceID: device, ephemeralPublicKey: key))
        }
        return result
    }
}

/// MD5 (RFC 1321), for the digest's checksums only.
public enum MD5 {
    static let shifts: [UInt32] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
        5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
        6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ]
    static let constants: [UInt32] = (0..<64).map { UInt32(truncatingIfNeeded: Int64(abs(sin(Double($0 + 1))) * 4_294_967_296)) }

    /// The 16-byte MD5 of `message`.
    public static func hash(_ message: [UInt8]) -> [UInt8] {
        var bytes = message
        let bitLength = UInt64(message.count) &* 8
        bytes.append(0x80)
        while bytes.count % 64 != 56 { bytes.append(0) }
        for index in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(index)))) }
        var a0: UInt32 = 0x6745_2301, b0: UInt32 = 0xEFCD_AB89, c0: UInt32 = 0x98BA_DCFE, d0: UInt32 = 0x1032_5476
        var words = [UInt32](repeating: 0, count: 16)
        for chunk in stride(from: 0, to: bytes.count, by: 64) {
            for index in 0..<16 {
                let base = chunk + index * 4
                words[index] = UInt32(bytes[base]) | UInt32(bytes[base + 1]) << 8 | UInt32(bytes[base + 2]) << 16 | UInt32(bytes[base + 3]) << 24
            }
            var a = a0, b = b0, c = c0, d = d0
            for round in 0..<64 {
                var f: UInt32
                let g: Int
                switch round {
                case 0..<16: f = (b & c) | (~b & d); g = round
                case 16..<32: f = (d & b) | (~d & c); g = (5 * round + 1) % 16
                case 32..<48: f = b ^ c ^ d; g = (3 * round + 5) % 16
                default: f = c ^ (b | ~d); g = (7 * round) % 16
                }
                f = f &+ a &+ constants[round] &+ words[g]
                a = d
                d = c
                c = b
                b = b &+ (f << shifts[round] | f >> (32 - shifts[round]))
            }
            a0 = a0 &+ a
            b0 = b0 &+ b
            c0 = c0 &+ c
            d0 = d0 &+ d
        }
        return [a0, b0, c0, d0].flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (8 * UInt32($0))) } }
    }
}
