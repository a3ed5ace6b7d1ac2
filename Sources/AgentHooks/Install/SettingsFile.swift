import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why an agent's settings file was left as it was.
public struct SettingsFileError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String

    /// Creates the error.
    public init(_ description: String) { self.description = description }
}

/// An agent's JSON settings file, read and written as a careful person would: a symlink, a file
/// that does not parse, one over 1 MiB or nested over 64 levels is refused and left untouched; a
/// write goes to a temporary file beside it, keeps the mode, is flushed, and replaces the file in
/// one rename, after the previous content was copied to a backup beside it.
public struct SettingsFile: Sendable {
    public let url: URL
    /// The most bytes read.
    public static let maxBytes = 1 << 20

    /// The file at `url`.
    public init(url: URL) { self.url = url }

    /// Where the previous content goes before a write.
    public var backupURL: URL { URL(fileURLWithPath: url.path + ".bak") }

    /// The file's JSON, or `nil` when there is no file.
    ///
    /// - Throws: ``SettingsFileError`` for a symlink, something that is not a regular file, a file
    ///   over ``maxBytes``, JSON that does not parse (with its line and column) or is not an object.
    public func read() throws(SettingsFileError) -> JSONValue? {
        var info = stat()
        guard lstat(url.path, &info) == 0 else {
            if errno == ENOENT { return nil }
            throw SettingsFileError("cannot read \(url.path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT != S_IFLNK else {
            throw SettingsFileError(
                "\(url.path) is a symbolic link; refusing to write through it (edit the file it points to by hand)")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw SettingsFileError("\(url.path) is not a regular file") }
        guard info.st_size <= Self.maxBytes else {
            throw SettingsFileError("\(url.path) is over 1 MiB; left untouched")
        }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw SettingsFileError("cannot read \(url.path)")
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(data)
        } catch {
            throw SettingsFileError(
                "\(url.path) does not parse as JSON (\(error)); it was left untouched: fix it and try again")
        }
        guard value.members != nil else {
            throw SettingsFileError("\(url.path) is not a JSON object; it was left untouched")
        }
        return value
    }

    /// Replaces the file with `text` (creating its directory), keeping its mode (0600 for a new
    /// file), after copying the previous content to ``backupURL``.
    public func write(_ text: String) throws(SettingsFileError) {
        let directory = url.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw SettingsFileError("cannot create \(directory.path)")
        }
        var info = stat()
        let exists = lstat(url.path, &info) == 0
        let mode = exists ? mode_t(info.st_mode & 0o7777) : 0o600
        if exists, let previous = FileManager.default.contents(atPath: url.path) {
            try replace(backupURL, with: [UInt8](previous), mode: mode)
        }
        try replace(url, with: Array(text.utf8), mode: mode)
    }

    /// Writes `bytes` to a temporary file beside `target`, flushes it and renames it over `target`.
    func replace(_ target: URL, with bytes: [UInt8], mode: mode_t) throws(SettingsFileError) {
        let temporary = target.deletingLastPathComponent()
            .appendingPathComponent(".\(target.lastPathComponent).\(getpid()).tmp").path
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        guard descriptor >= 0 else { throw SettingsFileError("cannot write beside \(target.path)") }
        var written = 0
        let ok = bytes.withUnsafeBytes { raw -> Bool in
            while written < raw.count {
                let count = systemWrite(descriptor, raw.baseAddress! + written, raw.count - written)
                guard count > 0 else { return false }
                written += count
            }
            return fchmod(descriptor, mode) == 0 && fsync(descriptor) == 0
        }
        close(descriptor)
        guard ok, rename(temporary, target.path) == 0 else {
            unlink(temporary)
            throw SettingsFileError("cannot write \(target.path): \(String(cString: strerror(errno)))")
        }
    }
}

/// `write(2)`, named apart from ``SettingsFile/write(_:)``.
@inline(__always)
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    return Glibc.write(descriptor, buffer, count)
    #else
    return Darwin.write(descriptor, buffer, count)
    #endif
}
