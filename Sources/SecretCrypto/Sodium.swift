internal import CSodium

/// The one place libsodium is initialised.
///
/// `sodium_init()` is idempotent and thread-safe, but calling it on every operation costs a
/// lock; a lazily initialised static runs it exactly once per process.
enum Sodium {
    private static let initialized: Bool = sodium_init() >= 0

    /// Ensures libsodium is initialised; traps if the library cannot start (no entropy source),
    /// since no operation of this module could then be trusted.
    @inline(__always)
    static func ensureInitialized() {
        precondition(initialized, "libsodium failed to initialise")
    }

    /// Fills `buffer` with bytes from the OS CSPRNG.
    static func randomBytes(_ buffer: UnsafeMutableRawBufferPointer) {
        ensureInitialized()
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }
}

/// A valid address for zero-length C arguments, which libsodium declares non-null.
///
/// `nonisolated(unsafe)` is sound: the allocation is made once, never written and never read
/// (it is only ever passed with a length of zero).
nonisolated(unsafe) private let emptyArgument = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16)

extension UnsafeRawBufferPointer {
    /// The base address typed for a C call; never nil, even when the buffer is empty.
    func cPointer<T>(to type: T.Type = UInt8.self) -> UnsafePointer<T> {
        UnsafeRawPointer(baseAddress ?? UnsafeRawPointer(emptyArgument)).assumingMemoryBound(to: T.self)
    }
}
