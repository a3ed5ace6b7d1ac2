import Crypto
import Foundation
import Testing

@testable import SecretCrypto

/// The SHA-1 behind ``NameBasedUUID`` (written out, so that the product needs no swift-crypto on
/// Linux): RFC 3174's examples, and swift-crypto's `Insecure.SHA1` on every length across three
/// block boundaries.
@Suite("SHA-1 for name-based UUIDs")
struct SHA1Tests {
    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test("RFC 3174's examples, and RFC 9562's version-5 UUID")
    func examples() {
        #expect(Self.hex(NameBasedUUID.sha1(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        let two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        #expect(Self.hex(NameBasedUUID.sha1(Array(two.utf8))) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(Self.hex(NameBasedUUID.sha1(million)) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
        #expect(Self.hex(NameBasedUUID.sha1([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        let id = NameBasedUUID.v5(namespace: NameBasedUUID.dns, name: Array("www.example.com".utf8))
        #expect(id.uuidString.lowercased() == "2ed6657d-e927-568b-95e1-2665a8aea6a2")
    }

    @Test("the same digest as swift-crypto for every length from 0 to 200 bytes")
    func agreesWithSwiftCrypto() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...200 {
            let message = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(NameBasedUUID.sha1(message) == Array(Insecure.SHA1.hash(data: message)), "length \(length)")
        }
    }
}
