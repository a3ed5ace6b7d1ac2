import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
import Darwin
private let systemWrite = Darwin.write
#endif

/// The one way this store writes a small file (a key file, `auth.json`): a process killed at
/// any instruction leaves either the old file or the whole new one, never a part.
///
/// 1. a temporary file beside the target, created `O_EXCL` with mode 0600;
/// 2. the bytes written in full;
/// 3. `fsync` of the temporary file;
/// 4. `rename` over the target (or, to create only, `link`, which fails if the target exists);
/// 5. `fsync` of the directory, so the new name survives a power cut too.
///
/// A temporary file left by a killed writer is removed by ``removeStaleTemporaries(in:)``
/// (the store does it when it opens): its name carries the writer's process id.
package enum AtomicFile {
    /// The steps, in order; a test helper kills its own process after one of them.
    package enum Step: String, CaseIterable, Sendable {
        case created, written, synced, renamed, directorySynced
    }

    /// Called after each step; a test helper sets it to kill its process there. `nil` otherwise.
    package static let afterStep = Mutex<(@Sendable (Step) -> Void)?>(nil)

    /// Writes `bytes` to `path` as described above.
    ///
    /// - Parameters:
    ///   - replacing: Replace an existing file (`rename`); with `false` an existing file is left
    ///     alone and ``LocalStoreError`` `.identityExists` is thrown (`link`).
    /// - Throws: ``LocalStoreError`` `.diskFull`, `.readOnly`, `.identityExists` or `.io`.
    package static func write(_ bytes: UnsafeRawBufferPointer, to path: String, replacing: Bool) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = "\(path)\(temporaryMarker)\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw error("cannot create a file beside \(path)") }
        var done = false
        defer { if !done { unlink(temporary) } }
        step(.created)
        var total = 0
        while total < bytes.count {
            let n = systemWrite(descriptor, bytes.baseAddress! + total, bytes.count - total)
            guard n > 0 else {
                let failure = error("cannot write \(path)")
                close(descriptor)
                throw failure
            }
            total += n
        }
        step(.written)
        guard fsync(descriptor) == 0 else {
            let failure = error("cannot write \(path) to disk")
            close(descriptor)
            throw failure
        }
        close(descriptor)
        step(.synced)
        if replacing {
            guard rename(temporary, path) == 0 else { throw error("cannot replace \(path)") }
        } else {
            guard link(temporary, path) == 0 else {
                if errno == EEXIST { throw LocalStoreError(.identityExists, "\(path) already exists") }
                throw error("cannot create \(path)")
            }
            unlink(temporary)
        }
        done = true
        step(.renamed)
        syncDirectory(directory)
        step(.directorySynced)
    }

    /// What every temporary file's name carries after its target's name.
    static let temporaryMarker = ".tmp-"

    /// Removes the temporary files in `directory` whose writer (the process id in the name) is
    /// gone: what a writer killed between steps 1 and 4 leaves.
    package static func removeStaleTemporaries(in directory: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names {
            guard let marker = name.range(of: temporaryMarker) else { continue }
            let rest = name[marker.upperBound...]
            guard let pid = rest.split(separator: "-").first.flatMap({ pid_t($0) }), pid > 0 else { continue }
            // kill(pid, 0) fails with ESRCH when no such process exists.
            if kill(pid, 0) != 0 && errno == ESRCH { unlink((directory as NSString).appendingPathComponent(name)) }
        }
    }

    static func syncDirectory(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if descriptor >= 0 {
            fsync(descriptor)
            close(descriptor)
        }
    }

    private static func step(_ step: Step) {
        if let hook = afterStep.withLock({ $0 }) { hook(step) }
    }

    /// The store error for the current `errno`: a full disk and a read-only file system get
    /// their own codes, with what to do.
    static func error(_ message: String) -> LocalStoreError {
        LocalStoreError.fromErrno(errno, message)
    }
}

extension LocalStoreError {
    /// The message of ``Code-swift.struct/diskFull``: what happened and what to do.
    static let diskFullMessage = "no space left on the device that holds the store: free space and run sync again"

    /// The store error for a failed file operation: `ENOSPC` and `EDQUOT` are a full disk,
    /// `EROFS` read-only media, anything else `.io` with the system's message.
    static func fromErrno(_ code: Int32, _ message: String) -> LocalStoreError {
        switch code {
        case ENOSPC, EDQUOT: LocalStoreError(.diskFull, diskFullMessage)
        case EROFS:
            LocalStoreError(.readOnly, "\(message): the store is on a read-only file system; sync needs to write it")
        default: LocalStoreError(.io, "\(message): \(String(cString: strerror(code)))")
        }
    }
}
