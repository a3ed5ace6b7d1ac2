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

/// A child process started with `posix_spawn`, its standard streams in files: what the CLI tests
/// run `sync-cli` with.
///
/// Not Foundation's `Process`: its `run()` crashed in a `memmove` (a bad pointer) with dozens of
/// children starting and ending from many threads at once, even with every start serialised
/// (``ChildProcesses``). Files instead of pipes: nothing to drain while the child runs, and
/// nothing lost when it is killed.
public final class SpawnedChild: @unchecked Sendable {
    public let pid: pid_t
    let directory: URL
    private var status: Int32?

    /// Starts `executable` with `arguments` in `workingDirectory`, `environment` as its whole
    /// environment, `stdin` as its standard input (empty by default).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String], workingDirectory: URL? = nil,
        stdin: String? = nil
    ) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let input = directory.appendingPathComponent("in")
        try Data((stdin ?? "").utf8).write(to: input)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input.path, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(
            &actions, 1, directory.appendingPathComponent("out").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(
            &actions, 2, directory.appendingPathComponent("err").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if let workingDirectory { _ = addChdir(&actions, workingDirectory.path) }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else { throw SpawnFailed(errno: spawned) }
        self.pid = pid
    }

    deinit {
        if status == nil { _ = try? wait() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Why a child could not start.
    public struct SpawnFailed: Error, CustomStringConvertible {
        public let errno: Int32
        public var description: String { "posix_spawn failed with errno \(errno)" }
    }

    /// Waits for the child to end; its wait status (`waitpid`'s).
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
    public var output: String { read("out") }
    /// What it wrote to standard error so far.
    public var errors: String { read("err") }

    private func read(_ name: String) -> String {
        String(decoding: (try? Data(contentsOf: directory.appendingPathComponent(name))) ?? Data(), as: UTF8.self)
    }
}
