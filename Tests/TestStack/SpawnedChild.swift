import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// glibc's `posix_spawn_file_actions_addchdir_np` (2.29 and later), which the Glibc module does
/// not export.
@_silgen_name("posix_spawn_file_actions_addchdir_np")
private func addChdir(
    _ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: UnsafePointer<CChar>
)
    -> Int32

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later): the child closes every
/// descriptor from `from` on, so it inherits none of the test process's sockets and pipes.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func addCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32

/// A child process started with `posix_spawn`, its standard streams in files: what the CLI tests
/// run `sync-cli` with.
///
/// Not Foundation's `Process`: its `run()` on Linux reads the directory `/proc/self/fd` and
/// copies each entry's whole 256-byte name field, past the end of the entry
/// (swift-corelibs-foundation#5472). When an entry ends glibc's read buffer and the next page is
/// not mapped, that copy faults: the test process, with over a thousand descriptors open at
/// times, crashed in a `memmove` that way, whether or not starts were serialised. Files instead
/// of pipes: nothing to drain while the child runs, and nothing lost when it is killed.
public final class SpawnedChild: @unchecked Sendable {
    public let pid: pid_t
    let directory: URL
    private var status: Int32?
    /// The file of its standard output (unless started with `pipeOutput`).
    public let outputFile: URL
    /// The file of its standard error.
    public let errorsFile: URL

    /// The write end of the child's standard input when started with `pipeInput` (closing it
    /// is the end of the input the child sees); otherwise nil.
    public let input: FileHandle?
    /// The read end of the child's standard output when started with `pipeOutput`; otherwise
    /// nil, and ``output`` reads it from its file.
    public let outputPipe: FileHandle?

    /// Starts `executable` with `arguments` in `workingDirectory`, `environment` as its whole
    /// environment. Its standard input is `stdin` (empty by default) or, with `pipeInput`, a
    /// pipe (``input``); its standard output a file or, with `pipeOutput`, a pipe
    /// (``outputPipe``); its standard error a file. It inherits no other descriptor.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String], workingDirectory: URL? = nil,
        stdin: String? = nil, pipeInput: Bool = false, pipeOutput: Bool = false
    ) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        outputFile = directory.appendingPathComponent("out")
        errorsFile = directory.appendingPathComponent("err")
        let input = directory.appendingPathComponent("in")
        try Data((stdin ?? "").utf8).write(to: input)
        let inputPipe = pipeInput ? try Self.pipe() : nil
        let outputPipe = pipeOutput ? try Self.pipe() : nil
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let inputPipe {
            posix_spawn_file_actions_adddup2(&actions, inputPipe.read, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, input.path, O_RDONLY, 0)
        }
        if let outputPipe {
            posix_spawn_file_actions_adddup2(&actions, outputPipe.write, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, outputFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        posix_spawn_file_actions_addopen(&actions, 2, errorsFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = addCloseFrom(&actions, 3)
        if let workingDirectory { _ = addChdir(&actions, workingDirectory.path) }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        // The child's ends are the child's alone.
        if let inputPipe { close(inputPipe.read) }
        if let outputPipe { close(outputPipe.write) }
        guard spawned == 0 else {
            if let inputPipe { close(inputPipe.write) }
            if let outputPipe { close(outputPipe.read) }
            throw SpawnFailed(errno: spawned)
        }
        self.pid = pid
        self.input = inputPipe.map { FileHandle(fileDescriptor: $0.write, closeOnDealloc: true) }
        self.outputPipe = outputPipe.map { FileHandle(fileDescriptor: $0.read, closeOnDealloc: true) }
    }

    /// A pipe whose two ends are closed on exec (the child gets copies through `dup2`).
    private static func pipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard Glibc.pipe(&ends) == 0 else { throw SpawnFailed(errno: errno) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    /// A child nobody waited for is reaped on a thread of its own, never on the thread that lets
    /// it go (often one of the cooperative pool's two): its files go once it has ended.
    deinit {
        guard status == nil else {
            try? FileManager.default.removeItem(at: directory)
            return
        }
        let (pid, directory) = (self.pid, self.directory)
        Thread.detachNewThread {
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Why a child could not start.
    public struct SpawnFailed: Error, CustomStringConvertible {
        public let errno: Int32
        public var description: String { "posix_spawn failed with errno \(errno)" }
    }

    /// Waits for the child to end on a thread of its own (``offThePool(_:)``); its wait status.
    @discardableResult
    public func exited() async throws -> Int32 {
        try await offThePool { try self.wait() }
    }

    /// Waits for the child to end on the calling thread; its wait status (`waitpid`'s). From
    /// async code, use ``exited()``.
    @discardableResult
    public func wait() throws -> Int32 {
        if let status { return status }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 {
            guard errno == EINTR else { throw SpawnFailed(errno: errno) }
        }
        status = raw
        return raw
    }

    /// The wait status if the child has ended, `nil` while it runs.
    public func ended() throws -> Int32? {
        if let status { return status }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, WNOHANG)
        if result == 0 { return nil }
        guard result == pid else { throw SpawnFailed(errno: errno) }
        status = raw
        return raw
    }

    /// Sends `signal` to the child if it has not been waited for.
    public func kill(_ signal: Int32) {
        if status == nil { _ = Glibc.kill(pid, signal) }
    }

    /// Whether the child still runs (it is reaped once it has ended).
    public var isRunning: Bool {
        do { return try ended() == nil } catch { return false }
    }

    /// The exit code of a child that exited, or 128 + the signal of one a signal ended.
    public static func exitCode(_ status: Int32) -> Int32 {
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    /// Whether a signal ended the child.
    public static func signalled(_ status: Int32) -> Bool {
        let signal = status & 0x7F
        return signal != 0 && signal != 0x7F
    }

    /// What it wrote to standard output so far.
    public var output: String { read(outputFile) }
    /// What it wrote to standard error so far.
    public var errors: String { read(errorsFile) }

    private func read(_ file: URL) -> String {
        String(decoding: (try? Data(contentsOf: file)) ?? Data(), as: UTF8.self)
    }
}
