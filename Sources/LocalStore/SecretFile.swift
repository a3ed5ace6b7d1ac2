import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small file of credentials in the store (`auth.json`): written atomically with mode 0600,
/// read only while nobody else can read it.
public enum SecretFile {
    /// Replaces `path` with `data`, atomically, mode 0600.
    ///
    /// - Throws: ``LocalStoreError`` `.io`.
    public static func write(_ data: Data, to path: String) throws {
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw DeviceKeyFile.ioError("cannot create \(temporary)") }
        let written = data.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor)
        close(descriptor)
        guard written == data.count, synced == 0, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw DeviceKeyFile.ioError("cannot write \(path)")
        }
        DeviceKeyFile.syncDirectory((path as NSString).deletingLastPathComponent)
    }

    /// Reads `path`, or `nil` when it does not exist.
    ///
    /// - Throws: ``LocalStoreError`` `.keyFileTooOpen` when group or others can access it.
    public static func read(_ path: String) throws -> Data? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        guard info.st_mode & S_IFMT == S_IFREG else { throw LocalStoreError(.keyFileMalformed, "\(path) is not a regular file") }
        guard info.st_mode & 0o077 == 0 else {
            throw LocalStoreError(.keyFileTooOpen, String(format: "permissions 0%o for %@ are too open (chmod 600 %@)", info.st_mode & 0o777, path, path))
        }
        return FileManager.default.contents(atPath: path)
    }
}
