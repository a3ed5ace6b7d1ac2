import Foundation
import RemoteStore
import SyncModel
import Testing

@testable import PostLoginSync

/// The `--json` reports are an interface scripts read: a report of each kind, with every field
/// set, must encode to exactly the bytes it encoded to when its fields were strings (the golden
/// files in `Golden/`, written before the fields became enums).
@Suite("--json reports keep their bytes")
struct ReportFormatTests {
    static let device = UUID(uuidString: "0c6a4a53-55a5-4d8e-9d83-3f0e3b3f2f11")!
    static let other = UUID(uuidString: "7f1d2e3c-4b5a-4968-8776-a5b4c3d2e1f0")!
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func phase(_ phase: SyncPhase, partial: Bool) -> PhaseReport {
        var report = PhaseReport(phase: phase)
        report.sent = 3
        report.applied = 2
        report.skipped = 1
        report.failed = partial ? 1 : 0
        report.deleted = 4
        report.durationSeconds = 0.25
        report.requests = 5
        report.bytesSent = 600
        report.bytesReceived = 700
        report.retries = 1
        if partial {
            report.status = .partial
            report.errors = [
                SyncIssue(
                    phase: phase, code: .keyMismatch, rowID: other.canonical, message: "device skipped: possible attack"
                )
            ]
        }
        return report
    }

    static func report(_ direction: SyncDirection) -> SyncReport {
        var report = SyncReport(
            direction: direction, deviceID: device, startedAt: start, finishedAt: start.addingTimeInterval(1.5),
            durationSeconds: 1.5, outcome: .partial,
            phases: [phase(.device, partial: false), phase(direction == .push ? .secrets : .envelopes, partial: true)])
        var failed = PhaseReport(phase: .sessions)
        failed.status = .failed
        report.phases.insert(failed, at: 1)
        report.envelopesSealed = 6
        report.envelopesOpened = 7
        report.requests = 10
        report.recipients = [
            DeviceDecision(
                deviceID: device, name: "laptop", deviceType: "linux-desktop", receives: true, reason: nil,
                keyFingerprint: "ab12",
                envelopeVersions: [1, 2], trust: .verified),
            DeviceDecision(
                deviceID: other, name: "browser", deviceType: "web-browser", receives: false,
                reason: "web browsers never receive secrets", keyFingerprint: nil, trust: .certificateMismatch),
        ]
        report.reconciliation = Reconciliation(method: .digest, buckets: 16, bucketsListed: 1, rowsListed: 3)
        var trust = TrustSummary(mode: .verified, identityFingerprint: "0000 1111 2222 3333 4444 5555 6666 7777")
        trust.verified = 1
        trust.keyMismatch = 1
        trust.note = "a note"
        trust.requests = 2
        report.trust = trust
        var requests = SecretRequestSummary()
        requests.open = 1
        requests.refusedDevices = [other]
        report.secretRequests = requests
        return report
    }

    static func golden(_ name: String) throws -> String {
        try String(contentsOf: goldenURL(name), encoding: .utf8)
    }

    static func goldenURL(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/\(name).json")
    }

    /// Whether `actual` is the golden file; with UPDATE_GOLDEN=1 it becomes the golden file
    /// (review the diff before committing it).
    static func matches(_ actual: String, golden name: String) throws -> Bool {
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
            try actual.write(to: goldenURL(name), atomically: true, encoding: .utf8)
        }
        return actual == (try golden(name))
    }

    /// What `printJSON` in sync-cli writes.
    static func printed<T: Encodable>(_ value: T) throws -> String {
        try JSONStyle.text(value) + "\n"
    }

    @Test("a report in the one JSON style reads back as it was")
    func styledReportRoundTrips() throws {
        let report = Self.report(.push)
        #expect(SyncReport.decode(report.json())?.json() == report.json())
        #expect(SyncReport.decode(report.json(pretty: false))?.json() == report.json())
        #expect(SyncReport.decode(report.json())?.deviceID == report.deviceID)
        #expect(SyncReport.decode(report.json())?.errors.map(\.rowID) == report.errors.map(\.rowID))
    }

    @Test("a report an older version stored, without this version's trust fields, still reads")
    func olderReport() throws {
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(Self.report(.pull).json().utf8)) as? [String: Any])
        var trust = try #require(object["trust"] as? [String: Any])
        for key in ["entriesVerified", "entriesRead", "revokedSenders", "reports", "head"] { trust[key] = nil }
        object["trust"] = trust
        let older = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        let read = try #require(SyncReport.decode(older))
        #expect(read.trust?.entriesRead == 0 && read.trust?.reports == [] && read.trust?.mode == .verified)
    }

    @Test(
        "push and pull reports (sync --json), a watch tick (sync --watch --json) and trust status (trust status --json)"
    )
    func reports() throws {
        #expect(try Self.matches(Self.report(.push).json() + "\n", golden: "push-report"))
        #expect(try Self.matches(Self.report(.pull).json() + "\n", golden: "pull-report"))
        var tick = WatchTick(number: 2, startedAt: Self.start, action: .sync)
        tick.reasons = ["1 device changed"]
        tick.report = Self.report(.push)
        tick.changeFeed = .feed
        #expect(try Self.matches(tick.json() + "\n", golden: "watch-tick"))
        var status = TrustStatus(deviceID: Self.device, isTrustRoot: true, mode: "log")
        status.identityFingerprint = "0000 1111 2222 3333 4444 5555 6666 7777"
        status.thisDevice = .verified
        status.head = TrustLogPosition(epoch: 1, seq: 3, hash: [UInt8](repeating: 0xAB, count: 32))
        status.headCreatedAt = Date(timeIntervalSince1970: 1_800_000_000)
        status.recoveryKeyBound = false
        status.pendingResets = [
            PendingReset(epoch: 2, hash: [UInt8](repeating: 0xCD, count: 32), deadline: 1_800_259_800)
        ]
        status.devices = [
            TrustStatus.Device(
                deviceID: Self.other, name: "phone", deviceType: "ios-phone", isActive: true, status: .keyMismatch,
                isThisDevice: false)
        ]
        #expect(try Self.matches(Self.printed(status), golden: "trust-status"))
    }
}
