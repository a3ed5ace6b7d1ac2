import Foundation
import RemoteStore
import SyncModel

/// Follows where an approval's (or a question's) alert went, for the asker's `onDeliveries`:
/// the request's own answer first, then `alert_deliveries` every 2 seconds until no entry can
/// change (notifications-2.md, "Nothing silently lost"). Reports only what changed; a failed
/// read is logged and tried at the next poll; a remote without delivery outcomes ends it.
actor DeliveryWatcher {
    let center: ApprovalCenter
    let alertID: UUID
    let kind: String
    let report: @Sendable (AlertDeliveries) -> Void
    let interval: Duration
    private var last: AlertDeliveries?
    private var lastRead = ContinuousClock.now
    private var done = false

    init(
        center: ApprovalCenter, alertID: UUID, kind: String = "approval", interval: Duration = .seconds(2),
        report: @escaping @Sendable (AlertDeliveries) -> Void
    ) {
        self.center = center
        self.alertID = alertID
        self.kind = kind
        self.interval = interval
        self.report = report
    }

    /// Reports the answer's `devices`, or reads them when the answer had none.
    func start(with devices: [AlertDelivery]?) async {
        guard let devices else { return await read() }
        lastRead = .now
        publish(
            AlertDeliveries(
                alertID: alertID, kind: kind, isFinal: !devices.contains { !$0.outcome.isFinal }, devices: devices))
    }

    /// Reads again when the interval has passed and something may still change.
    func poll() async {
        guard !done, ContinuousClock.now - lastRead >= interval else { return }
        await read()
    }

    private func read() async {
        lastRead = .now
        do {
            publish(try await center.deliveries(of: alertID))
        } catch let error as RemoteStoreError where error.code == .missingFunction {
            done = true
        } catch {
            center.logger?.warning("alert \(alertID.canonical): delivery outcomes not read: \(error)")
        }
    }

    private func publish(_ deliveries: AlertDeliveries) {
        done = deliveries.isFinal
        guard deliveries != last else { return }
        last = deliveries
        report(deliveries)
    }
}
