import Foundation

// The printed table of a run.
extension SyncBench {
    static func table(_ results: [WorkerResult], runs: Int) -> String {
        var lines: [String] = []
        func pad(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }
        func lpad(_ text: String, _ width: Int) -> String {
            String(repeating: " ", count: max(0, width - text.count)) + text
        }
        lines.append(
            "sync: wall time = median of \(runs) runs (fresh world each; at XL the first pull is the median of three phones per world); requests, bytes, sealed/opened and RSS (the worker's at the scenario's start and its peak during it) from that median run"
        )
        lines.append(
            pad("remote", 10) + pad("size", 5) + pad("scenario", 23) + lpad("time s", 9) + lpad("requests", 10)
                + lpad("sent KiB", 10)
                + lpad("recv KiB", 10) + lpad("sealed", 8) + lpad("opened", 8) + lpad("start MiB", 11)
                + lpad("peak MiB", 10))
        for result in results {
            for scenario in scenarios {
                guard let measures = result.measures[scenario], !measures.isEmpty else { continue }
                let sorted = measures.sorted { $0.seconds < $1.seconds }
                let m = sorted[sorted.count / 2]
                lines.append(
                    pad(result.remote, 10) + pad(result.size, 5) + pad(scenario, 23)
                        + lpad(String(format: "%.3f", m.seconds), 9)
                        + lpad("\(m.requests)", 10) + lpad(String(m.bytesSent / 1024), 10)
                        + lpad(String(m.bytesReceived / 1024), 10)
                        + lpad("\(m.sealed)", 8) + lpad("\(m.opened)", 8)
                        + lpad(m.startRSSKiB.map { String($0 / 1024) } ?? "-", 11)
                        + lpad(m.peakRSSKiB.map { String($0 / 1024) } ?? "-", 10))
            }
        }
        lines.append("")
        lines.append(
            "where the time goes (seconds per phase, from the median run's report; CPU seconds per process while it ran):"
        )
        for result in results {
            for scenario in ["first push", "first pull"] {
                guard let measures = result.measures[scenario], !measures.isEmpty else { continue }
                let m = measures.sorted { $0.seconds < $1.seconds }[measures.count / 2]
                let phases = m.phaseSeconds.sorted { $0.value > $1.value }.map {
                    "\($0.key) \(String(format: "%.3f", $0.value))"
                }
                let cpu = (m.cpuSeconds ?? [:]).sorted { $0.key < $1.key }.map {
                    "\($0.key) \(String(format: "%.2f", $0.value))"
                }
                lines.append(
                    "  \(pad(result.remote, 10)) \(result.size) \(scenario): " + phases.joined(separator: ", ")
                        + (cpu.isEmpty ? "" : "; CPU s: " + cpu.joined(separator: ", ")))
            }
        }
        lines.append("")
        lines.append(
            "per-row baseline (the design's flow: a request per row, every pair re-sealed, one at a time) vs our first push:"
        )
        for result in results {
            guard let baseline = result.baseline, let ours = result.measures["first push"]?.map(\.seconds).sorted()
            else { continue }
            let median = ours[ours.count / 2]
            lines.append(
                "  \(pad(result.remote, 10)) \(result.size): baseline \(String(format: "%.2f", baseline.seconds)) s, \(baseline.requests) requests; "
                    + "ours \(String(format: "%.3f", median)) s -> \(String(format: "%.1f", baseline.seconds / median))x faster"
            )
        }
        lines.append("")
        lines.append(
            "floor for the first push (crypto: pairs / libsodium envelope v2 seals per second on all cores; insert: the same rows by multi-row INSERT over postgres-nio):"
        )
        for result in results {
            guard let crypto = result.floorCryptoSeconds, let insert = result.floorInsertSeconds,
                let ours = result.measures["first push"]?.map(\.seconds).sorted()
            else { continue }
            let median = ours[ours.count / 2]
            lines.append(
                "  \(pad(result.remote, 10)) \(result.size): crypto \(String(format: "%.3f", crypto)) s + insert \(String(format: "%.3f", insert)) s = "
                    + "\(String(format: "%.3f", crypto + insert)) s; first push \(String(format: "%.3f", median)) s = \(String(format: "%.2f", median / (crypto + insert)))x the floor"
            )
        }
        lines.append("")
        lines.append("targets (issue: the next frontier), from the median run:")
        func median(_ result: WorkerResult, _ scenario: String) -> Measure? {
            guard let measures = result.measures[scenario], !measures.isEmpty else { return nil }
            return measures.sorted { $0.seconds < $1.seconds }[measures.count / 2]
        }
        for result in results {
            let name = "\(result.remote) \(result.size)"
            if let m = median(result, "incremental pull") {
                lines.append(
                    "  \(name): incremental pull (one new session) \(m.requests) requests, \(String(format: "%.3f", m.seconds)) s"
                        + (result.size == "L" && result.remote == "postgrest"
                            ? " (target <= 5 requests, < 0.15 s)" : ""))
            }
            if let m = median(result, "no-change pull") {
                lines.append("  \(name): no-change pull \(m.requests) requests, \(String(format: "%.3f", m.seconds)) s")
            }
            for scenario in ["first push", "push after new device"] {
                if let peak = median(result, scenario)?.peakRSSKiB, result.size == "L" {
                    lines.append("  \(name): \(scenario) peak RSS \(peak / 1024) MiB (target < 90 MiB)")
                }
            }
            if result.size == "XL", let measures = result.measures["first pull"], !measures.isEmpty {
                let peaks = measures.compactMap(\.peakRSSKiB).map { $0 / 1024 }
                lines.append(
                    "  \(name): first pull peak RSS \(peaks.map(String.init).joined(separator: ", ")) MiB (target < 100 MiB)"
                )
            }
        }
        return lines.joined(separator: "\n")
    }
}
