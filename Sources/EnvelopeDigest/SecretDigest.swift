import Foundation
public import SyncModel

/// The digest's functions, the same on the pusher and on both remotes.
public enum SecretDigest {
    /// The bucket count a push asks for: a power of two, at most 65,536, with about
    /// `rowsPerBucket` rows a bucket.
    ///
    /// The default, 256 rows: a difference costs listing ~256 rows (one page), and the digest
    /// stays small: ~260 KiB of JSON at 1,000,000 pairs, where 16 rows a bucket made it 4 MiB,
    /// whose decoding was most of a no-change push at that size.
    public static func bucketCount(forPairs pairs: Int, rowsPerBucket: Int = 256) -> Int {
        var buckets = 1
        while buckets < 65_536 && buckets * max(1, rowsPerBucket) < pairs { buckets *= 2 }
        return buckets
    }

    /// Whether `buckets` is a power of two from 1 to 65,536.
    public static func isValidBucketCount(_ buckets: Int) -> Bool {
        (1...65_536).contains(buckets) && buckets & (buckets - 1) == 0
    }

    /// The bucket of a session.
    public static func bucket(of sessionID: UUID, buckets: Int) -> Int {
        bucket(ofSessionText: sessionID.canonical, buckets: buckets)
    }

    /// The bucket of a session given as its lowercase text.
    public static func bucket(ofSessionText text: String, buckets: Int) -> Int {
        Int(MD5.halves(of: text).0 >> 48) % buckets
    }

    /// `row_hash` as (h1, h2).
    public static func rowHash(sessionID: String, deviceID: String, ephemeralPublicKey: String) -> (Int64, Int64) {
        let hash = MD5.halves(of: sessionID, ":", deviceID, ":", ephemeralPublicKey)
        return (Int64(bitPattern: hash.0), Int64(bitPattern: hash.1))
    }

    /// The hash of an id in a ``RowSetDigest``: MD5 of its lowercase text, as (h1, h2).
    public static func idHash(_ id: UUID) -> (Int64, Int64) {
        let hash = MD5.halves(of: id.canonical)
        return (Int64(bitPattern: hash.0), Int64(bitPattern: hash.1))
    }

    /// The ``RowSetDigest`` of a set of ids.
    public static func digest(ofIDs ids: some Sequence<UUID>) -> RowSetDigest {
        var digest = RowSetDigest()
        for id in ids { digest.add(idHash(id)) }
        return digest
    }

    /// SQLite statements that create `table` (session_id, pairs, h1, h2): per session, the count
    /// and XOR of the `row_h1`/`row_h2` of `source`'s rows, kept by triggers on `source` as its
    /// rows are inserted, updated and deleted (rows whose `row_h1` is NULL are left out). The
    /// digest then reads one row per session instead of hashing every row.
    ///
    /// SQLite has no XOR: `(a | b) - (a & b)` is one, because `a & b`'s bits are a subset of
    /// `a | b`'s, so the subtraction never borrows and never leaves the 64-bit range.
    public static func sqliteKeptDigest(table: String, source: String) -> String {
        func xor(_ a: String, _ b: String) -> String { "((\(a) | \(b)) - (\(a) & \(b)))" }
        let add = """
            INSERT INTO \(table) (session_id, pairs, h1, h2) VALUES (NEW.session_id, 1, NEW.row_h1, NEW.row_h2)
                ON CONFLICT (session_id) DO UPDATE SET pairs = pairs + 1, h1 = \(xor("h1", "excluded.h1")), h2 = \(xor("h2", "excluded.h2"));
            """
        let remove = """
            UPDATE \(table) SET pairs = pairs - 1, h1 = \(xor("h1", "OLD.row_h1")), h2 = \(xor("h2", "OLD.row_h2")) WHERE session_id = OLD.session_id;
                DELETE FROM \(table) WHERE session_id = OLD.session_id AND pairs <= 0;
            """
        return """
            CREATE TABLE \(table) (
                session_id TEXT PRIMARY KEY NOT NULL,
                pairs INTEGER NOT NULL,
                h1 INTEGER NOT NULL,
                h2 INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE TRIGGER \(table)_insert AFTER INSERT ON \(source) WHEN NEW.row_h1 IS NOT NULL BEGIN
                \(add)
            END;
            CREATE TRIGGER \(table)_delete AFTER DELETE ON \(source) WHEN OLD.row_h1 IS NOT NULL BEGIN
                \(remove)
            END;
            CREATE TRIGGER \(table)_update_out AFTER UPDATE OF row_h1, row_h2 ON \(source) WHEN OLD.row_h1 IS NOT NULL BEGIN
                \(remove)
            END;
            CREATE TRIGGER \(table)_update_in AFTER UPDATE OF row_h1, row_h2 ON \(source) WHEN NEW.row_h1 IS NOT NULL BEGIN
                \(add)
            END;
            """
    }

    /// Adds one session's part of a digest (kept per session: its rows' count and XORs) to
    /// `result`, keyed by bucket. `session` is the session id as lowercase text.
    public static func add(
        session: String, pairs: Int, h1: Int64, h2: Int64, buckets: Int, to result: inout [Int: DigestBucket]
    ) {
        let bucket = bucket(ofSessionText: session, buckets: buckets)
        var digest = result[bucket] ?? DigestBucket(bucket: bucket)
        digest.pairs += pairs
        digest.h1 ^= h1
        digest.h2 ^= h2
        result[bucket] = digest
    }
}

/// MD5 (RFC 1321), for the digest's checksums only. Written for short messages hashed by the
/// hundred thousand: no heap allocation per hash.
public enum MD5 {
    static let shifts: [UInt32] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
        5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
        6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ]
    static let constants: [UInt32] = (0..<64).map {
        UInt32(truncatingIfNeeded: Int64(abs(sin(Double($0 + 1))) * 4_294_967_296))
    }

    /// The 16-byte MD5 of `message`.
    public static func hash(_ message: [UInt8]) -> [UInt8] {
        let (high, low) = padded(length: message.count) { buffer in
            for (index, byte) in message.enumerated() { buffer[index] = byte }
        }
        return (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
    }

    /// The MD5 of the UTF-8 of `parts` joined, as its bytes 0-7 and 8-15 read big-endian.
    public static func halves(of parts: String...) -> (UInt64, UInt64) {
        var length = 0
        for part in parts { length += part.utf8.count }
        return padded(length: length) { buffer in
            var offset = 0
            for part in parts {
                for byte in part.utf8 {
                    buffer[offset] = byte
                    offset += 1
                }
            }
        }
    }

    /// Writes a `length`-byte message with `fill` into a stack buffer, pads it and hashes it.
    static func padded(length: Int, fill: (UnsafeMutableBufferPointer<UInt8>) -> Void) -> (UInt64, UInt64) {
        let total = (length + 8) / 64 * 64 + 64
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: total) { buffer in
            fill(buffer)
            buffer[length] = 0x80
            for index in (length + 1)..<(total - 8) { buffer[index] = 0 }
            let bits = UInt64(length) &* 8
            for index in 0..<8 { buffer[total - 8 + index] = UInt8(truncatingIfNeeded: bits >> (8 * UInt64(index))) }
            return digest(UnsafeBufferPointer(buffer))
        }
    }

    static func digest(_ bytes: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64) {
        var a0: UInt32 = 0x6745_2301, b0: UInt32 = 0xEFCD_AB89, c0: UInt32 = 0x98BA_DCFE, d0: UInt32 = 0x1032_5476
        constants.withUnsafeBufferPointer { k in
            shifts.withUnsafeBufferPointer { s in
                withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 16) { words in
                    for chunk in stride(from: 0, to: bytes.count, by: 64) {
                        for index in 0..<16 {
                            let base = chunk + index * 4
                            words[index] =
                                UInt32(bytes[base]) | UInt32(bytes[base + 1]) << 8 | UInt32(bytes[base + 2]) << 16
                                | UInt32(bytes[base + 3]) << 24
                        }
                        var a = a0, b = b0, c = c0, d = d0
                        for round in 0..<64 {
                            var f: UInt32
                            let g: Int
                            switch round {
                            case 0..<16:
                                f = (b & c) | (~b & d)
                                g = round
                            case 16..<32:
                                f = (d & b) | (~d & c)
                                g = (5 &* round &+ 1) & 15
                            case 32..<48:
                                f = b ^ c ^ d
                                g = (3 &* round &+ 5) & 15
                            default:
                                f = c ^ (b | ~d)
                                g = (7 &* round) & 15
                            }
                            f = f &+ a &+ k[round] &+ words[g]
                            a = d
                            d = c
                            c = b
                            b = b &+ (f << s[round] | f >> (32 &- s[round]))
                        }
                        a0 = a0 &+ a
                        b0 = b0 &+ b
                        c0 = c0 &+ c
                        d0 = d0 &+ d
                    }
                }
            }
        }
        // The digest is a0..d0 little-endian; read as bytes 0-7 and 8-15 big-endian.
        return (
            UInt64(a0.byteSwapped) << 32 | UInt64(b0.byteSwapped), UInt64(c0.byteSwapped) << 32 | UInt64(d0.byteSwapped)
        )
    }
}
