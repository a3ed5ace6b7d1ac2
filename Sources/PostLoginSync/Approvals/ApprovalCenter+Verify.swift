import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

// How the asking desktop judges an answer: an approval's decision (approvals.md, "What the
// requesting desktop accepts") and a question's signed choice (docs/agent-hooks.md) share the
// trust checks: a certified, unrevoked device, certified at the trust-log position it answered from.
extension ApprovalCenter {
    /// Whether a decided row's signed decision counts; only the signed bytes decide.
    func verify(
        _ row: ApprovalRequestRow, against sent: SentApproval, read: [UInt8], identity: UUID, user: UUID
    ) async throws -> Result<ApprovalOutcome, ApprovalRefusal> {
        func refuse(_ reason: String, device: UUID? = row.decidedByDeviceID) -> Result<ApprovalOutcome, ApprovalRefusal>
        {
            .failure(ApprovalRefusal(requestID: sent.requestID, deviceID: device, reason: reason))
        }
        guard let bodyText = row.decisionBody, let signatureText = row.decisionSignature,
            let bytes = try? ByteEncoding.bytes(base64: bodyText)
        else { return refuse("the row holds no signed decision") }
        let unverified: ApprovalDecision
        do {
            unverified = try ApprovalDecision.parse(bytes)
        } catch {
            return refuse("the decision is not a well-formed decision statement")
        }
        let device = unverified.deviceID
        guard let head = unverified.logHead else {
            return refuse("the decision is version 1 (it names no trust-log head): refused", device: device)
        }
        let trust = try await trust()
        let certificate: DeviceCertificate
        switch Self.signer(device, in: trust) {
        case .certified(let found): certificate = found
        case .refused(let reason): return refuse(reason, device: device)
        }
        guard let sentBody = try? ByteEncoding.bytes(base64: sent.body) else {
            return refuse("this device's copy of the request is unreadable", device: device)
        }
        let expected = ApprovalDecision.Expectation(
            userID: user, sessionID: sent.sessionID, requestID: sent.requestID, requesterDeviceID: identity,
            expiresAt: sent.expiresAt, body: sentBody, read: read)
        let decision: ApprovalDecision
        do {
            decision = try ApprovalDecision.accept(
                SignedStatement(body: bodyText, signature: signatureText), deviceID: device,
                signingKey: certificate.ed25519PublicKey, expecting: expected)
        } catch {
            return refuse(error.description, device: device)
        }
        if let reason = try await checkHead(head, of: device, trust: trust) { return refuse(reason, device: device) }
        let status = decision.verdict == .approve ? ApprovalStatus.approved : ApprovalStatus.denied
        guard row.status == status, row.decidedByDeviceID == device else {
            return refuse(
                "the row's status or deciding device disagrees with the signed decision (forged)", device: device)
        }
        return .success(decision.verdict == .approve ? .approved(by: device) : .denied(by: device))
    }

    /// The certificate an answering device signs under: refused when the device is revoked or
    /// has no valid certificate in the verified trust.
    static func signer(_ device: UUID, in trust: TrustSnapshot) -> Signer {
        guard trust.revocations[device] == nil else { return .refused("the deciding device is revoked") }
        guard let certificate = trust.certificates[device] else {
            return .refused("the deciding device has no valid certificate")
        }
        return .certified(certificate)
    }

    /// An answering device's signing certificate, or why there is none.
    enum Signer {
        case certified(DeviceCertificate)
        case refused(String)
    }

    /// Checks the trust-log head an answering device pinned: it must be a position of this
    /// desktop's own verified log (read again once when beyond its head) where the device was
    /// certified.
    ///
    /// - Returns: Why the answer is refused, or `nil` when the head holds.
    /// - Throws: ``SyncError`` `.trustLogForked` when the device answered from another entry at a
    ///   position this desktop holds, `.trustLogTruncated` when the log ends before it.
    func checkHead(_ head: ApprovalDecision.LogHead, of device: UUID, trust: TrustSnapshot) async throws -> String? {
        var trust = trust
        guard var log = trust.log, head.epoch == log.epoch else {
            return "the deciding device is paired with another epoch of the trust log (a stale pairing): refused as "
                + "an uncertified device"
        }
        if head.seq > log.headSeq {
            trust = try await self.trust()
            guard let reread = trust.log, reread.epoch == head.epoch, head.seq <= reread.headSeq else {
                throw TrustLogSync.truncated(
                    head.seq, "an answer names seq \(head.seq), beyond the end of the log this desktop can read")
            }
            log = reread
        }
        guard let ours = try await local.trustLogEntryHash(epoch: head.epoch, seq: head.seq) else {
            throw TrustLogSync.truncated(head.seq, "the log this desktop pinned lacks seq \(head.seq)")
        }
        guard ours == head.hash else {
            throw TrustLogSync.forked(
                head.seq, "device \(device.canonical) answered from a log that holds another entry at seq \(head.seq)")
        }
        guard let certifiedAt = log.devices[device]?.certifiedSeq, certifiedAt <= head.seq, trust.isTrusted(device),
            trust.revocations[device] == nil
        else { return "the deciding device was not certified at the head it answered from" }
        return nil
    }
}
