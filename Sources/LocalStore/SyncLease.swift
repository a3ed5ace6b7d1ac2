import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive hold on a store for one sync: `flock` on `sync.lock` in the store directory.
///
/// The kernel drops the lock when the holder exits or is killed, so a crash never leaves a
/// stale lease. Locks belong to open file descriptions, so two leases conflict within one
/// process as well as across processes. The holder writes who it is into the file, so a waiter
/// that gives up can say who holds it.
public final class SyncLease: Sendable {
    private let descriptor: Mutex<Int32?>
    /// What the holder wrote about itself.
    public let holder: String

    init(descriptor: Int32, holder: String) {
        self.descriptor = Mutex(descriptor)
        self.holder = holder
    }

    /// Releases the lease; later calls do nothing.
    public func release() {
        descriptor.withLock { fd in
            guard let open = fd else { return }
            _ = ftruncate(open, 0)
            _ = flock(open, LOCK_UN)
            close(open)
            fd = nil
        }
    }

    deinit { release() }
}

extension DeviceStore {
    /// The lease file's path.
    public var leasePath: String { directory.appendingPathComponent("sync.lock").path }

    /// Takes the store's sync lease, waiting up to `timeout` for another holder to finish.
    ///
    /// - Parameters:
    ///   - purpose: What this holder does (`"push"`), shown to anyone who has to wait.
    ///   - timeout: How long to wait; zero fails at once when the lease is held.
    /// - Returns: The lease; release it (or let it go out of scope) when the sync ends.
    /// - Throws: ``LocalStoreError`` `.storeBusy` naming the holder; `CancellationError`.
    public func acquireSyncLease(purpose: String, timeout: Duration = .zero) async throws -> SyncLease {
        let fd = open(leasePath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DeviceKeyFile.ioError("cannot open \(leasePath)") }
        let deadline = ContinuousClock.now + timeout
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let lockError = errno
            guard lockError == EWOULDBLOCK || lockError == EINTR else {
                close(fd)
                throw DeviceKeyFile.ioError("cannot lock \(leasePath)")
            }
            if ContinuousClock.now >= deadline {
                let holder = Self.readHolder(fd)
                close(fd)
                throw LocalStoreError(
                    .storeBusy,
                    "another sync holds this store (\(holder.isEmpty ? "holder unknown" : holder)); try again when it finishes"
                )
            }
            do {
                try await Task.sleep(for: .milliseconds(25))
            } catch {
                close(fd)
                throw error
            }
        }
        let formatter = ISO8601DateFormatter()
        let holder = "pid \(getpid()) (\(purpose)) since \(formatter.string(from: Date()))"
        _ = ftruncate(fd, 0)
        _ = holder.withCString { pwrite(fd, $0, strlen($0), 0) }
        return SyncLease(descriptor: fd, holder: holder)
    }

    private static func readHolder(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return "" }
        return String(decoding: buffer.prefix(count), as: UTF8.self)
    }
}
