import Foundation
import TestStack
import Testing

/// Small file systems the tests mount themselves (as root): a tmpfs to fill to its last block,
/// and read-only mounts. Where mounting is not allowed the tests that need it are skipped, and
/// their trait says why.
enum Mounts {
    /// Whether this process may mount a tmpfs (root with the capability; not in every container).
    static let available: Bool = {
        guard geteuid() == 0 else { return false }
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("mount-probe-\(UUID().uuidString)")
        guard (try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)) != nil else {
            return false
        }
        defer { try? FileManager.default.removeItem(at: probe) }
        guard run("/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe.path]) == 0 else { return false }
        return run("/bin/umount", [probe.path]) == 0
    }()

    static let skipReason: Comment =
        "mounting a tmpfs needs root and CAP_SYS_ADMIN, which this environment does not give"

    /// Runs a command; its exit status.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        guard let child = try? SpawnedChild(tool, arguments, environment: ProcessInfo.processInfo.environment),
            let status = try? child.wait()
        else { return -1 }
        return SpawnedChild.exitCode(status)
    }

    /// A new tmpfs of `size` (`"3m"`) on a fresh directory.
    static func tmpfs(size: String) throws -> URL {
        let point = FileManager.default.temporaryDirectory.appendingPathComponent("tmpfs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: point, withIntermediateDirectories: true)
        guard run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", point.path]) == 0 else {
            throw MountFailed(point: point.path)
        }
        return point
    }

    /// Makes the mount at `point` read-only.
    static func remountReadOnly(_ point: URL) throws {
        guard run("/bin/mount", ["-o", "remount,ro", point.path]) == 0 else { throw MountFailed(point: point.path) }
    }

    /// Mounts `directory` on itself, read-only: the directory becomes read-only media.
    static func bindReadOnly(_ directory: URL) throws {
        guard run("/bin/mount", ["--bind", directory.path, directory.path]) == 0,
            run("/bin/mount", ["-o", "remount,bind,ro", directory.path]) == 0
        else { throw MountFailed(point: directory.path) }
    }

    static func unmount(_ point: URL) {
        run("/bin/umount", ["-l", point.path])
    }

    /// Fills the file system holding `directory` to its last block; returns the filler's path.
    /// Calling it again tops the same filler up: blocks freed since (a process that exits deletes
    /// its store's write-ahead log) are taken again.
    static func fill(_ directory: URL) throws -> URL {
        let filler = directory.appendingPathComponent("filler")
        let descriptor = open(filler.path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        guard descriptor >= 0 else { throw MountFailed(point: directory.path) }
        defer { close(descriptor) }
        let block = [UInt8](repeating: 0xAA, count: 4096)
        while block.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
        // The last partial block: single bytes until nothing fits.
        while block.withUnsafeBytes({ write(descriptor, $0.baseAddress, 1) }) > 0 {}
        return filler
    }

    /// Fills the file system holding `directory` until `leaving` bytes are free (to the block);
    /// returns the filler's path.
    static func fill(_ directory: URL, leaving: Int) throws -> URL {
        var info = statvfs()
        guard statvfs(directory.path, &info) == 0 else { throw MountFailed(point: directory.path) }
        let free = Int(info.f_bavail) * Int(info.f_frsize)
        let filler = directory.appendingPathComponent("filler-\(UUID().uuidString)")
        let descriptor = open(filler.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw MountFailed(point: directory.path) }
        defer { close(descriptor) }
        var left = max(0, free - leaving)
        let block = [UInt8](repeating: 0xAA, count: 4096)
        while left > 0 {
            let wrote = block.withUnsafeBytes { write(descriptor, $0.baseAddress, min(left, $0.count)) }
            guard wrote > 0 else { break }
            left -= wrote
        }
        return filler
    }

    /// Bytes free on the file system holding `directory`.
    static func free(_ directory: URL) -> Int {
        var info = statvfs()
        guard statvfs(directory.path, &info) == 0 else { return -1 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    struct MountFailed: Error, CustomStringConvertible {
        let point: String
        var description: String { "cannot mount at \(point)" }
    }
}
