#if canImport(CSodium)
import CSodium
import Foundation
import SecretCrypto
import Testing

/// The trust log's strict key checks are comparisons and one decode; these tests hold them to
/// the slow definitions they replace, on every edge encoding and on random ones.
@Suite("Strict key checks agree with libsodium's own operations")
struct KeyValidityTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("testvectors/third_party")

    /// The definition: canonical y, decodes (three doublings through libsodium), 8·A is not the identity.
    static func slowEd25519(_ bytes: [UInt8]) -> Bool {
        var c = (bytes[31] & 0x7F) ^ 0x7F
        for i in 1...30 { c |= bytes[i] ^ 0xFF }
        if c == 0 && bytes[0] >= 0xED { return false }
        var a = bytes
        for _ in 0..<3 {
            var out = [UInt8](repeating: 0, count: 32)
            guard crypto_core_ed25519_add(&out, a, a) == 0 else { return false }
            a = out
        }
        return a != [1] + [UInt8](repeating: 0, count: 31)
    }

    /// The definition: the top bit clear, u below p, and an exchange with it is not all zero.
    static func slowX25519(_ bytes: [UInt8]) throws -> Bool {
        guard bytes[31] & 0x80 == 0 else { return false }
        if bytes[31] == 0x7F, bytes[1...30].allSatisfy({ $0 == 0xFF }), bytes[0] >= 0xED { return false }
        return !(try X25519PublicKey(rawRepresentation: bytes)).isLowOrder
    }

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// Edge encodings: the small-order points and y = p − 1 ... p + 18, each with both sign bits.
    static var edges: [[UInt8]] {
        var edges: [[UInt8]] = [
            [UInt8](repeating: 0, count: 32), [1] + [UInt8](repeating: 0, count: 31),
            hex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),
            hex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),
            hex("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
            hex("5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157"),
        ]
        for low: UInt8 in 0xEC...0xFF { edges.append([low] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]) }
        return edges
            + edges.map {
                var signed = $0
                signed[31] |= 0x80
                return signed
            }
    }

    @Test("Ed25519: edge encodings, Wycheproof's keys, real keys and random bytes")
    func ed25519() throws {
        var inputs = Self.edges
        let eddsa =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: Self.root.appendingPathComponent("eddsa/ed25519_test.json"))) as! [String: Any]
        for group in eddsa["testGroups"] as! [[String: Any]] {
            inputs.append(Self.hex((group["publicKey"] as! [String: Any])["pk"] as! String))
        }
        for _ in 0..<64 { inputs.append(Ed25519PrivateKey().publicKey.rawRepresentation) }
        for _ in 0..<512 { inputs.append((0..<32).map { _ in UInt8.random(in: 0...255) }) }
        var passed = 0
        for bytes in inputs {
            let fast = try Ed25519PublicKey(rawRepresentation: bytes).isCanonicalAndNotSmallOrder
            #expect(fast == Self.slowEd25519(bytes), "\(bytes)")
            if fast { passed += 1 }
        }
        // Both outcomes are exercised: random bytes decode about half the time.
        #expect(passed > 64 && passed < inputs.count - 64)
    }

    @Test("X25519: edge encodings, every Wycheproof public value, real keys and random bytes")
    func x25519() throws {
        var inputs = Self.edges
        let wycheproof =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: Self.root.appendingPathComponent("wycheproof/x25519_test.json")))
            as! [String: Any]
        for group in wycheproof["testGroups"] as! [[String: Any]] {
            for test in group["tests"] as! [[String: Any]] { inputs.append(Self.hex(test["public"] as! String)) }
        }
        for _ in 0..<64 { inputs.append(X25519PrivateKey().publicKey.rawRepresentation) }
        for _ in 0..<256 { inputs.append((0..<32).map { _ in UInt8.random(in: 0...255) }) }
        var refused = 0
        for bytes in inputs {
            let fast = try X25519PublicKey(rawRepresentation: bytes).isCanonicalAndNotLowOrder
            #expect(fast == (try Self.slowX25519(bytes)), "\(bytes)")
            if !fast { refused += 1 }
        }
        #expect(refused > 20)
    }
}
#endif
