import Foundation
import GRDB

extension World {
    /// The embedded remote's file, opened as its operator would open it: beside the stores and
    /// remotes writing it, so it waits for their locks (up to 30 s, a ceiling that only catches a
    /// hang) instead of failing at once with "database is locked" on a busy machine.
    func operatorDatabase() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        return try DatabaseQueue(
            path: directory.appendingPathComponent("remote.sqlite").path, configuration: configuration)
    }
}
