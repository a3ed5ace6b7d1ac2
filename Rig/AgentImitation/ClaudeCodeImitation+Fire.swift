import AgentHooks
import Foundation
import TestStack

#if canImport(Glibc)
import Glibc
#endif

extension ClaudeCodeImitation {
    /// Fires one event: every matching handler at once with `input` on its stdin; the async ones
    /// are left running (``settle()`` waits for them); the blocking ones are waited for, killed at
    /// their timeout, and their outputs read by the reference's rules.
    public func fire(_ input: JSONValue) async throws -> Fired {
        guard let event = input["hook_event_name"]?.string else { throw ImitationError("no hook_event_name") }
        let handlers = try handlers(event: event, value: Self.matchValue(input, event: event))
        let text = input.compactText
        let cwd = input["cwd"]?.string.map { URL(fileURLWithPath: $0) } ?? project
        var env = environment
        env["CLAUDE_PROJECT_DIR"] = project.path
        var blocking: [(Handler, SpawnedChild)] = []
        for handler in handlers {
            let child = try spawn(handler, stdin: text, environment: env, cwd: cwd)
            if handler.isAsync {
                backgroundRuns.withLock { $0.append(child) }
            } else {
                blocking.append((handler, child))
            }
        }
        let limit = budget(event: event, handlers: blocking.map(\.0))
        var fired = Fired()
        try await withThrowingTaskGroup(of: Run.self) { group in
            for (handler, child) in blocking {
                group.addTask { try await self.finish(child, handler: handler, limit: limit) }
            }
            for try await run in group { fired.runs.append(run) }
        }
        interpret(&fired, event: event)
        return fired
    }

    /// A handler's time: the test's override, else SessionEnd's shared budget, else the handler's
    /// own `timeout` or the event's default.
    func budget(event: String, handlers: [Handler]) -> @Sendable (Handler) -> Duration {
        if let override = timeouts[event] { return { _ in override } }
        if event == "SessionEnd" {
            let raised = handlers.compactMap(\.timeout).max().map { Duration.seconds(min($0, 60)) }
            let shared = max(raised ?? .milliseconds(1_500), .milliseconds(1_500))
            return { _ in shared }
        }
        let fallback: Duration = event == "UserPromptSubmit" ? .seconds(30) : .seconds(600)
        return { handler in handler.timeout.map { .seconds($0) } ?? fallback }
    }

    func spawn(_ handler: Handler, stdin: String, environment: [String: String], cwd: URL) throws -> SpawnedChild {
        if let args = handler.args {
            return try SpawnedChild(
                resolve(handler.command, path: environment["PATH"] ?? ""), args, environment: environment,
                workingDirectory: cwd, stdin: stdin)
        }
        return try SpawnedChild(
            "/bin/sh", ["-c", handler.command], environment: environment, workingDirectory: cwd, stdin: stdin)
    }

    /// `command` as exec form resolves it: a path as it is, a bare name on `PATH`.
    func resolve(_ command: String, path: String) -> String {
        guard !command.contains("/") else { return command }
        return path.split(separator: ":").map { "\($0)/\(command)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        } ?? command
    }

    /// Waits for a blocking handler until `limit`; then SIGTERM, and SIGKILL after ``killGrace``.
    func finish(
        _ child: SpawnedChild, handler: Handler, limit: @Sendable (Handler) -> Duration
    ) async throws -> Run {
        let deadline = ContinuousClock.now + limit(handler)
        var timedOut = false
        while child.isRunning {
            if ContinuousClock.now >= deadline {
                timedOut = true
                child.kill(SIGTERM)
                let grace = ContinuousClock.now + killGrace
                while child.isRunning && ContinuousClock.now < grace { try await Task.sleep(for: .milliseconds(10)) }
                child.kill(SIGKILL)
                break
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        let status = try await offThePool { try child.wait() }
        let stdout = timedOut ? "" : child.output
        let trimmed = stdout.drop { $0.isWhitespace }
        let json = trimmed.first == "{" ? try? JSONValue.parse(Array(stdout.utf8)) : nil
        return Run(
            handler: handler, exitCode: SpawnedChild.exitCode(status), stdout: stdout, stderr: child.errors,
            timedOut: timedOut, json: json)
    }

    /// The reference's reading of exit codes and stdout, over every blocking run.
    func interpret(_ fired: inout Fired, event: String) {
        var preToolUse: [(String, JSONValue?)] = []
        for run in fired.runs where !run.timedOut {
            guard let json = run.json else {
                if run.exitCode == 0, !run.stdout.isEmpty, event == "SessionStart" || event == "UserPromptSubmit" {
                    fired.context.append(run.stdout)
                } else if run.exitCode != 0 && run.exitCode != 2 {
                    fired.hookErrors.append(
                        "Failed with non-blocking status code: "
                            + (run.stderr.split(separator: "\n").first.map(String.init) ?? ""))
                }
                continue
            }
            if let message = json["systemMessage"]?.string { fired.systemMessages.append(message) }
            let specific = json["hookSpecificOutput"]
            guard specific?["hookEventName"]?.string == event else { continue }
            if event == "PermissionRequest", let decision = specific?["decision"] {
                switch decision["behavior"]?.string {
                case "allow":
                    if fired.permission == nil {
                        fired.permission = .allow(
                            updatedInput: decision["updatedInput"], updatedPermissions: decision["updatedPermissions"])
                    }
                case "deny": fired.permission = .deny(message: decision["message"]?.string)
                default: break
                }
            }
            if event == "PreToolUse", let decision = specific?["permissionDecision"]?.string {
                preToolUse.append((decision, specific?["updatedInput"]))
            }
            if run.exitCode == 2 && event == "PreToolUse" { preToolUse.append(("deny", nil)) }
        }
        for decision in ["deny", "defer", "ask", "allow"] {
            if let found = preToolUse.first(where: { $0.0 == decision }) {
                fired.preToolUse = (found.0, found.1)
                break
            }
        }
    }
}

/// A settings file or an event the imitation cannot run.
public struct ImitationError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
