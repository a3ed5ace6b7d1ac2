import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// `read` and `write` of the C library (the enum's own methods share their names).
#if canImport(Glibc)
private let systemRead = Glibc.read
#elseif canImport(Darwin)
private let systemRead = Darwin.read
#endif

/// A small file of credentials in the store (`auth.json`): written atomically with mode 0600,
/// read only while nobody else can read it.
public enum SecretFile {
    /// Replaces `path` with `data`, mode 0600, with `AtomicFile` (a killed writer leaves the
    /// old file or the whole new one).
    ///
    /// - Throws: ``LocalStoreError`` `.diskFull`, `.readOnly` or `.io`.
    public static func write(_ data: Data, to path: String) throws {
        try data.withUnsafeBytes { try AtomicFile.write($0, to: path, replacing: true) }
    }

    /// The largest credentials file read (an auth session is well under 8 KiB).
    static let maxBytes = 64 * 1024

    /// Reads `path`, or `nil` when it does not exist.
    ///
    /// The same rules as the device key: a regular file (not a symbolic link, FIFO or device:
    /// opened without blocking and checked on the open descriptor), owned by the current user,
    /// with no permission for group or others.
    ///
    /// - Throws: ``LocalStoreError`` `.authFileTooOpen` (group or others can access it, or
    ///   another user owns it), `.authFileMalformed` (not a regular file, or too large), `.io`.
    public static func read(_ path: String) throws -> Data? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            if errno == ELOOP {
                throw LocalStoreError(.authFileMalformed, "\(path) is a symbolic link; refusing to use it")
            }
            throw DeviceKeyFile.ioError("cannot open \(path)")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw DeviceKeyFile.ioError("cannot stat \(path)") }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw LocalStoreError(.authFileMalformed, "\(path) is not a regular file")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw LocalStoreError(
                .authFileTooOpen,
                String(format: "permissions 0%o for %@ are too open (chmod 600 %@)", info.st_mode & 0o777, path, path))
        }
        guard info.st_uid == geteuid() else {
            throw LocalStoreError(.authFileTooOpen, "\(path) is owned by uid \(info.st_uid), not by the current user")
        }
        guard info.st_size <= off_t(maxBytes) else {
            throw LocalStoreError(.authFileMalformed, "\(path) is larger than \(maxBytes) bytes")
        }
        var data = Data(count: Int(info.st_size))
        let count = data.count
        let total = data.withUnsafeMutableBytes { buffer -> Int in
            var total = 0
            while total < count {
                let n = systemRead(descriptor, buffer.baseAddress! + total, count - total)
                if n <= 0 { break }
                total += n
            }
            return total
        }
        guard total == count else { throw LocalStoreError(.authFileMalformed, "\(path) could not be read in full") }
        return data
    }
}
