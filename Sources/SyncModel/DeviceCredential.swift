import Foundation

/// What proves to the remote which device makes a call (docs/trust.md, "Device credentials").
///
/// A login names the user, not the device: every device of a user holds the same kind of token.
/// Each device therefore draws 32 random bytes when it is made (its credential, kept with its
/// keys) and sends them with every request; the remote keeps only their SHA-256, registered once
/// for the device, and acts for the device whose credential a request carries, never for a
/// device id the request names. When the trust log revokes the device, its credential maps to no
/// device any more.
///
/// The bytes never appear in a description, a log, an error or a URL: only ``headerValue``
/// gives them, for the request header.
public struct DeviceCredential: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The header the credential travels in.
    public static let headerName = "x-device-credential"
    /// The credential's length in bytes.
    public static let byteCount = 32

    /// The device the credential belongs to.
    public let deviceID: UUID
    private let bytes: [UInt8]

    /// A credential of `deviceID`.
    ///
    /// - Throws: ``DeviceCredentialError`` when `bytes` are not 32 bytes.
    public init(deviceID: UUID, bytes: some Collection<UInt8>) throws {
        guard bytes.count == Self.byteCount else { throw DeviceCredentialError() }
        self.init(deviceID: deviceID, exactly: Array(bytes))
    }

    /// A fresh credential of `deviceID`: 32 bytes from the system's random source.
    public static func random(for deviceID: UUID) -> DeviceCredential {
        var generator = SystemRandomNumberGenerator()
        return DeviceCredential(
            deviceID: deviceID, exactly: (0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        )
    }

    /// `bytes` already checked (or made) to be ``byteCount`` long.
    private init(deviceID: UUID, exactly bytes: [UInt8]) {
        self.deviceID = deviceID
        self.bytes = bytes
    }

    /// The header's value: the 32 bytes as 64 lowercase hex digits.
    public var headerValue: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Runs `body` over the raw bytes (for hashing them).
    public func withBytes<T>(_ body: ([UInt8]) throws -> T) rethrows -> T { try body(bytes) }

    public var description: String { "DeviceCredential(device \(deviceID.canonical), <redacted>)" }
    public var debugDescription: String { description }
}

/// A device credential of the wrong length.
public struct DeviceCredentialError: Error, Sendable, CustomStringConvertible {
    public var description: String { "a device credential is 32 bytes" }
}
