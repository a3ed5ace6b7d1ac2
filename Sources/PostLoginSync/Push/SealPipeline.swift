import EnvelopeDigest
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization

// The push's sealing work: read from the store in chunks, then sealed on every core.
extension SyncEngine {
    /// Reads the sealing work from the store in chunks of about ``SyncOptions/sealChunk`` pairs,
    /// a page of sessions at a time: each session's own secret with the `partial` recipients
    /// whose ledger entry is missing or names another key, and the recipients that asked for it.
    /// When every recipient is covered, only the requested sessions are read.
    struct SealWorkReader {
        let local: DeviceStore
        /// The sessions this push may seal; the store may hold newer ones.
        let sessions: Set<UUID>
        let partial: [Recipient]
        let marks: [UUID: String]
        let chunkPairs: Int
        /// Recipients that asked, by session.
        var requested: [UUID: [Recipient]]
        var after: UUID?
        var finished = false

        init(
            local: DeviceStore, sessions: Set<UUID>, partial: [Recipient], all: [Recipient], marks: [UUID: String],
            requested: [EnvelopePair: [UUID]], chunkPairs: Int
        ) {
            self.local = local
            self.sessions = sessions
            self.partial = partial
            self.marks = marks
            self.chunkPairs = max(1, chunkPairs)
            let byID = Dictionary(all.map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
            var bySession: [UUID: [Recipient]] = [:]
            for pair in requested.keys {
                if let recipient = byID[pair.deviceID] { bySession[pair.sessionID, default: []].append(recipient) }
            }
            self.requested = bySession
        }

        /// The next chunk, or `nil` when the work is done.
        mutating func next() async throws -> [SealWork]? {
            var chunk: [SealWork] = []
            var pairs = 0
            while !finished && pairs < chunkPairs {
                try Task.checkCancellation()
                var page: [(sessionID: UUID, sealed: OwnSealedSecret)]
                if partial.isEmpty {
                    // Only requested sessions: read them by id, in id order, a page at a time.
                    let ids = requested.keys.filter { after == nil || $0.canonical > after!.canonical }
                        .sorted { $0.canonicallyPrecedes($1) }.prefix(chunkPairs)
                    page = try await local.ownSealedSecrets(sessions: Set(ids)).map {
                        (sessionID: $0.key, sealed: $0.value)
                    }
                    .sorted { $0.sessionID.canonicallyPrecedes($1.sessionID) }
                    if ids.count < chunkPairs { finished = true }
                    after = ids.last ?? after
                } else {
                    page = try await local.ownSealedSecrets(
                        after: after, limit: max(1, (chunkPairs - pairs) / partial.count))
                    if page.isEmpty { finished = true }
                    after = page.last?.sessionID ?? after
                    page.removeAll { !sessions.contains($0.sessionID) }
                }
                guard !page.isEmpty else { continue }
                var ledger: [UUID: [UUID: String]] = [:]
                if !partial.isEmpty {
                    // Only the partial recipients' entries: after a new device, one entry a session
                    // instead of one per recipient (40,000 entries a page at size L).
                    for item in try await local.ledger(
                        recipients: Set(partial.map(\.deviceID)), sessions: Set(page.map(\.sessionID)))
                    {
                        ledger[item.sessionID, default: [:]][item.recipientDeviceID] = item.recipientKeyFingerprint
                    }
                }
                for (session, own) in page {
                    var missing = partial.filter { ledger[session]?[$0.deviceID] != marks[$0.deviceID] }
                    for recipient in requested[session] ?? []
                    where !missing.contains(where: { $0.deviceID == recipient.deviceID }) {
                        missing.append(recipient)
                    }
                    guard !missing.isEmpty else { continue }
                    chunk.append(SealWork(session: session, own: own, recipients: missing))
                    pairs += missing.count
                }
            }
            return chunk.isEmpty ? nil : chunk
        }
    }

    /// One session's own secret and the recipients it must be sealed to.
    struct SealWork: Sendable {
        let session: UUID
        let own: OwnSealedSecret
        let recipients: [Recipient]
    }

    /// Opens each session's own secret once and seals it for its recipients (version 2,
    /// authenticated by this desktop's key, to those that read it; version 1 to the rest),
    /// spread over ``SyncOptions/cryptoConcurrency`` tasks.
    func seal(
        _ work: [SealWork], key: X25519PrivateKey, sender: UUID, writesV2: Bool
    ) async throws -> ([EnvelopeRecord], [SyncIssue]) {
        let parts = try await inParallel(work) { part in
            var sealed: [EnvelopeRecord] = []
            var problems: [SyncIssue] = []
            // DH(this desktop's key, each recipient's key), once per recipient for this task's
            // part of the push; wiped when the task ends, never stored.
            var exchanges = RecipientExchanges()
            for item in part {
                try Task.checkCancellation()
                let sessionID = SessionID(item.session)
                let secret: SessionSecret
                do {
                    secret = try item.own.envelope.open(sessionID: sessionID, using: key)
                } catch {
                    problems.append(
                        SyncIssue(
                            phase: .secrets, code: .secretUnreadable, rowID: item.session.canonical,
                            message: "this session's own secret cannot be opened with the device key"))
                    continue
                }
                for recipient in item.recipients {
                    do {
                        let envelope =
                            recipient.version(writingVersion2: writesV2) == 2
                            ? try SecretEnvelope.sealV2(
                                secret, for: recipient.publicKey, recipientDeviceID: recipient.deviceID,
                                sessionID: sessionID,
                                sender: key, senderDeviceID: sender, generation: item.own.generation,
                                exchanges: &exchanges)
                            : try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)
                        sealed.append(
                            EnvelopeRecord(
                                sessionID: item.session, deviceID: recipient.deviceID,
                                ephemeralPublicKey: envelope.ephemeralPublicKey,
                                encryptedSecret: envelope.encryptedSecret))
                    } catch {
                        problems.append(
                            SyncIssue(
                                phase: .secrets, code: .sealFailed,
                                rowID: "\(item.session.canonical)/\(recipient.deviceID.canonical)",
                                message: "\(error)"))
                    }
                }
            }
            return (sealed, problems)
        }
        return (parts.flatMap(\.0), parts.flatMap(\.1))
    }
}
