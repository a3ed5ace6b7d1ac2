import Foundation
import LocalStore
import SyncModel

// A child process for DeviceStore's tests.
//
//   localstore-test-helper hold-lease DIR
//       takes DIR's sync lease, prints "held", and holds it until its standard input closes
//       (the parent decides when, however slow the machine), then exits (releasing it).
//   localstore-test-helper bulk-write DIR REPOSITORY_ID COUNT
//       upserts COUNT new sessions under REPOSITORY_ID in one transaction; after the first
//       1,000 rows it prints "writing" and sleeps inside the transaction, to be SIGKILLed.
//   localstore-test-helper bulk-load DIR REPOSITORY_ID COUNT
//       loads COUNT new sessions under REPOSITORY_ID into the empty sessions table through
//       loadingSessionsInBulk (its indexes dropped), prints "loading" with the rows written, and
//       sleeps inside the load, to be SIGKILLed before the indexes are built again.
//   localstore-test-helper atomic-write DIR KIND STEP
//       writes DIR/auth.json (KIND replace: over the old one) or DIR/new.key (KIND create) through
//       AtomicFile, killing itself with SIGKILL right after STEP.

/// Writes a line unbuffered, so the parent sees it at once.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let arguments = CommandLine.arguments
if arguments.count == 5, arguments[1] == "atomic-write" {
    let directory = URL(fileURLWithPath: arguments[2])
    guard let step = AtomicFile.Step(rawValue: arguments[4]) else { exit(64) }
    AtomicFile.afterStep.withLock { hook in
        hook = { reached in if reached == step { kill(getpid(), SIGKILL) } }
    }
    let bytes = [UInt8](repeating: 0x4E, count: 4096)
    if arguments[3] == "replace" {
        try SecretFile.write(Data(bytes), to: directory.appendingPathComponent("auth.json").path)
    } else {
        try bytes.withUnsafeBytes {
            try AtomicFile.write($0, to: directory.appendingPathComponent("new.key").path, replacing: false)
        }
    }
    say("finished")
    exit(0)
}
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: localstore-test-helper hold-lease|bulk-write|bulk-load DIR ...\n".utf8))
    exit(64)
}
let store = try await DeviceStore.opened(directory: URL(fileURLWithPath: arguments[2]))

switch arguments[1] {
case "hold-lease":
    let lease = try await store.acquireSyncLease(purpose: "test helper")
    say("held")
    _ = FileHandle.standardInput.readDataToEndOfFile()
    lease.release()
case "bulk-write":
    let repository = UUID(uuidString: arguments[3])!
    let identity = try await store.requireIdentity()
    let count = Int(arguments[4]) ?? 10_000
    let user = identity.userID ?? UUID()
    let rows = (0..<count).map { _ in SessionRecord(userID: user, deviceID: identity.id, repositoryID: repository) }
    try await store.upsertSessions(rows) { written in
        if written == 1000 {
            say("writing")
            Thread.sleep(forTimeInterval: 60)
        }
    }
    say("finished")
case "bulk-load":
    let repository = UUID(uuidString: arguments[3])!
    let identity = try await store.requireIdentity()
    let count = Int(arguments[4]) ?? 1_000
    let user = identity.userID ?? UUID()
    let rows = (0..<count).map { _ in SessionRecord(userID: user, deviceID: identity.id, repositoryID: repository) }
    try await store.loadingSessionsInBulk {
        try await store.applySessions(PreparedSessions(rows))
        say("loading")
        try await Task.sleep(for: .seconds(60))
    }
    say("finished")
default:
    exit(64)
}
