/// Bytes of key material that are wiped when released, compared in constant time and never
/// printed.
///
/// The bytes live in one heap buffer owned by the value; they are reachable only through
/// ``withUnsafeBytes(_:)``. When the last copy of the value goes away the buffer is cleared with
/// `explicit_bzero` (`memset_s` on Apple platforms) before it is freed. `description`, `debugDescription` and the reflection
/// mirror all show `<redacted>`, so a stray `print`, string interpolation or `dump` cannot leak
/// it.
///
/// ```swift
/// let key = SecureBytes(randomCount: 32)
/// print(key)              // <redacted>
/// key.withUnsafeBytes { bytes in ... }
/// ```
public struct SecureBytes: Sendable {
    /// The owning buffer.
    ///
    /// `@unchecked Sendable` is sound because the buffer is written only inside `init` (before
    /// the reference escapes) and only read afterwards; `deinit` runs when no reference remains.
    final class Storage: @unchecked Sendable {
        let buffer: UnsafeMutableRawBufferPointer

        init(count: Int) {
            buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Swift.max(count, 1), alignment: 16)
            if count == 0 {
                // Keep a one-byte allocation so base addresses are never nil, but expose nothing.
                buffer.storeBytes(of: 0, as: UInt8.self)
            }
        }

        deinit {
            Primitives.wipe(buffer)
            buffer.deallocate()
        }
    }

    let storage: Storage

    /// The number of bytes held.
    public let count: Int

    /// Creates `count` bytes, letting `initializer` write them.
    ///
    /// - Parameters:
    ///   - count: The number of bytes.
    ///   - initializer: Writes exactly `count` bytes into the buffer it is given.
    /// - Throws: Whatever `initializer` throws; the partial buffer is wiped.
    public init(
        count: Int,
        initializingWith initializer: (UnsafeMutableRawBufferPointer) throws -> Void
    ) rethrows {
        precondition(count >= 0, "negative byte count")
        let storage = Storage(count: count)
        try initializer(UnsafeMutableRawBufferPointer(rebasing: storage.buffer[0..<count]))
        self.storage = storage
        self.count = count
    }

    /// Creates `count` bytes from the OS CSPRNG.
    ///
    /// - Parameter count: The number of random bytes.
    public init(randomCount count: Int) {
        self.init(count: count) { Primitives.backend.randomBytes($0) }
    }

    /// Copies `bytes` into a new secure buffer.
    ///
    /// The caller remains responsible for wiping its own copy.
    ///
    /// - Parameter bytes: The key material to copy.
    public init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { buffer in
            _ = buffer.initializeMemory(as: UInt8.self, from: bytes)
        }
    }

    /// Calls `body` with a read-only view of the bytes.
    ///
    /// The pointer must not escape `body`.
    ///
    /// - Parameter body: A closure that reads the bytes.
    /// - Returns: What `body` returns.
    /// - Throws: Whatever `body` throws.
    public func withUnsafeBytes<Result>(
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        try body(UnsafeRawBufferPointer(rebasing: storage.buffer[0..<count]))
    }

    /// Base address of the bytes, for C calls inside this module.
    var baseAddress: UnsafeRawPointer { UnsafeRawPointer(storage.buffer.baseAddress!) }
}

extension SecureBytes: Equatable {
    /// Compares in constant time (for equal lengths); lengths are not secret.
    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.count == 0 { return true }
        return Primitives.equal(lhs.baseAddress, rhs.baseAddress, count: lhs.count)
    }
}

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Zeroes `buffer` in a way the compiler cannot drop (`explicit_bzero`, `memset_s`): for temporary
    /// arrays that held secret bytes.
    public static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        Primitives.wipe(buffer)
    }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "SecureBytes(<redacted>, \(count) bytes)" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
