import Foundation

/// A trust-log pin damaged as a disk would damage it (issue 68): the stored bytes with one bit of
/// the identity key changed and the checksum left as it was.
public enum DamagedPin {
    /// The pin's stored form was not the checked form (`{"sha256": …, "state": base64 JSON}`).
    public struct NotACheckedPin: Error {}

    /// `stored` with bit 0 of byte `byte` of the identity key flipped.
    public static func identityKeyChanged(_ stored: Data, byte: Int = 7) throws -> Data {
        guard var outer = try JSONSerialization.jsonObject(with: stored) as? [String: Any],
            let inner = Data(base64Encoded: outer["state"] as? String ?? ""),
            var state = try JSONSerialization.jsonObject(with: inner) as? [String: Any],
            var key = Data(base64Encoded: state["identityKey"] as? String ?? ""), byte < key.count
        else { throw NotACheckedPin() }
        key[byte] ^= 0x01
        state["identityKey"] = key.base64EncodedString()
        outer["state"] = try JSONSerialization.data(withJSONObject: state, options: .sortedKeys).base64EncodedString()
        return try JSONSerialization.data(withJSONObject: outer, options: .sortedKeys)
    }
}
