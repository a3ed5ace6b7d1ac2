import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization

// Runs a sync's phases and accumulates its report: push and pull share it.
extension SyncEngine {

    /// Accumulates a report while phases run.
    final class Recorder: @unchecked Sendable {
        // @unchecked: only ever used from the one task running the sync, never concurrently.
        var report: SyncReport
        let progress: ProgressHandler?
        let logger: Logger?

        init(direction: SyncDirection, deviceID: UUID, progress: ProgressHandler?, logger: Logger?) {
            report = SyncReport(
                direction: direction, deviceID: deviceID, startedAt: Date(), finishedAt: Date(), durationSeconds: 0,
                outcome: .success, phases: [])
            self.progress = progress
            self.logger = logger
        }

        /// Runs one phase; an error that escapes it fails the phase, not the sync, except a store
        /// that cannot be written (a full disk, read-only media): every later phase would fail
        /// the same way, so the sync stops with that error and its one instruction.
        ///
        /// The phase's requests are those its task (and the tasks it starts) made, plus those of
        /// `earlier`: work begun for this phase while others ran (its time is theirs).
        func phase(
            _ phase: SyncPhase, counting earlier: MetricsTally? = nil, _ body: (inout PhaseReport) async throws -> Void
        ) async throws {
            var entry = PhaseReport(phase: phase)
            let tally = MetricsTally()
            let start = ContinuousClock.now
            emit(phase, 0, 0)
            do {
                try await MetricsTally.$current.withValue(tally) { try await body(&entry) }
                if entry.failed > 0 || !entry.errors.isEmpty { entry.status = .partial }
            } catch is CancellationError {
                throw CancellationError()
            } catch let error as LocalStoreError where error.code == .diskFull || error.code == .readOnly {
                throw error
            } catch {
                entry.status = .failed
                entry.errors.append(SyncIssue(phase: phase, code: Self.code(of: error), message: "\(error)"))
            }
            var delta = tally.metrics
            if let earlier { delta.add(earlier.metrics) }
            entry.requests = delta.requests
            entry.bytesSent = delta.bytesSent
            entry.bytesReceived = delta.bytesReceived
            entry.retries = delta.retries
            entry.durationSeconds = (ContinuousClock.now - start).seconds
            logger?.info(
                "\(phase.rawValue): \(entry.status), applied \(entry.applied), failed \(entry.failed), \(entry.requests) requests"
            )
            report.phases.append(entry)
        }

        func emit(_ phase: SyncPhase, _ completed: Int, _ total: Int, action: String = "Syncing") {
            progress?(SyncProgress(phase: phase, completed: completed, total: total, action: action))
        }

        static func code(of error: Error) -> SyncIssue.Code {
            switch error {
            case let error as RemoteStoreError: SyncIssue.Code(remote: error.code)
            case let error as LocalStoreError: SyncIssue.Code(local: error.code)
            case is CryptoError: .crypto
            case let error as SyncError: SyncIssue.Code(rawValue: error.code.rawValue)
            default: .error
            }
        }

        func finish(local: DeviceStore) async -> SyncReport {
            report.finishedAt = Date()
            report.durationSeconds = report.finishedAt.timeIntervalSince(report.startedAt)
            let metrics = report.phases
            report.requests = metrics.map(\.requests).reduce(0, +) + (report.trust?.requests ?? 0)
            report.bytesSent = metrics.map(\.bytesSent).reduce(0, +)
            report.bytesReceived = metrics.map(\.bytesReceived).reduce(0, +)
            report.retries = metrics.map(\.retries).reduce(0, +)
            // A phase with nothing to do (no request, no row) is neither a success nor a failure:
            // a push with nothing local to send to a dead server failed as much as one with rows.
            let failed = report.phases.filter { $0.status == .failed }.count
            let idle = report.phases.filter {
                $0.status == .ok && $0.requests == 0 && $0.sent == 0 && $0.applied == 0 && $0.deleted == 0
                    && $0.skipped == 0
            }.count
            if failed > 0 && failed + idle == report.phases.count {
                report.outcome = .failure
            } else if failed > 0 || !report.errors.isEmpty {
                report.outcome = .partial
            } else {
                report.outcome = .success
            }
            try? await local.saveLastReport(report.json(pretty: false), finishedAt: report.finishedAt)
            return report
        }
    }
}
