import ArgumentParser
import Foundation
import Logging
import PushDelivery

/// `push-worker report`: the figures that prove notifications work, per UTC day
/// (`notification_report`).
struct Report: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print notification figures per UTC day: approvals asked, answered and missed, alert latency, ...",
        discussion: """
            Reads notification_report(days) with the worker's database login (all users, no ids): \
            approvals and questions by the day they were asked, alerts by the day they closed; the \
            outbox's figures cover its retention (7 days by default). Exit 1 when the database cannot \
            be read or has no report (apply supabase/migrations/*_notifications_2.sql).
            """)

    @Option(help: "Days to report, 1-31, newest first.") var days = 7
    @Flag(help: "Print the report as JSON (one object per day).") var json = false

    func validate() throws {
        guard (1...31).contains(days) else { throw ValidationError("--days must be 1 to 31") }
    }

    func run() async throws {
        var logger = Logger(label: "push-worker")
        logger.logLevel = .critical
        let configuration = try Setup.configuration()
        let runtime = try Setup.runtime(configuration, logger: logger)
        let days = days
        let result: Result<String, any Error> = await Setup.withClient(runtime) {
            if let problem = await Setup.probe(runtime, configuration) {
                return .failure(DatabaseUnreachable(problem: problem))
            }
            do { return .success(try await runtime.worker.outbox.report(days: days)) } catch { return .failure(error) }
        }
        try? await runtime.transport.shutdown()
        let text: String
        switch result {
        case .failure(let error):
            FileHandle.standardError.write(
                Data("push-worker: report failed: \(String(describing: error).prefix(200))\n".utf8))
            throw ExitCode(1)
        case .success(let value): text = value
        }
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        guard let rows = object as? [[String: Any]] else { throw ExitCode(1) }
        if json {
            let data = try JSONSerialization.data(withJSONObject: rows, options: [.prettyPrinted, .sortedKeys])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        print(Self.table(rows))
    }

    static let columns: [(key: String, title: String)] = [
        ("day", "day"), ("approvalsAsked", "asked"), ("approvalsAnswered", "answered"),
        ("approvalsMissed", "missed"), ("approvalsCancelled", "cancelled"), ("answerSecondsMedian", "answer s p50"),
        ("questionsAsked", "questions"), ("questionsMissed", "q missed"), ("alertsDelivered", "delivered"),
        ("alertsFailed", "failed"), ("alertsDropped", "dropped"), ("alertLatencyMedian", "latency p50"),
        ("alertLatencyP95", "latency p95"), ("liveActivitiesStarted", "LA started"),
        ("liveActivitiesEnded", "LA ended"),
    ]

    /// One line per day under a header; a median without data is `-`.
    static func table(_ rows: [[String: Any]]) -> String {
        func cell(_ value: Any?) -> String {
            switch value {
            case let number as NSNumber:
                let double = number.doubleValue
                return double == double.rounded() ? String(Int(double)) : String(format: "%.2f", double)
            case let text as String: return text
            default: return "-"
            }
        }
        let cells = [columns.map(\.title)] + rows.map { row in columns.map { cell(row[$0.key]) } }
        let widths = columns.indices.map { index in cells.map { $0[index].count }.max() ?? 0 }
        return cells.map { line in
            line.enumerated().map { index, text in
                index == 0
                    ? text.padding(toLength: widths[index], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[index] - text.count) + text
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
