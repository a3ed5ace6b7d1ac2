import Foundation
import TestStack
import Testing

/// `supabase/schema.sql` is the migrations' result in one file a reader can search; stale, it
/// would mislead, so the suite compares it with the stack's migrated database.
@Suite("supabase/schema.sql", .enabled(if: !StackEnvironment.skipped))
struct SchemaFileTests {
    @Test("matches what the migrations build (`make schema` writes it)")
    func matchesTheMigrations() throws {
        _ = try StackEnvironment.require()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [root.appendingPathComponent("scripts/schema.sh").path, "check"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(message)")
    }
}
