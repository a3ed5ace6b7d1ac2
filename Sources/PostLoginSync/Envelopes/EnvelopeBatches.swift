import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

extension SyncEngine {
    /// A batch of envelope rows on its way through a pull: what checking them needs, and once
    /// opened, the outcome of each.
    struct Opening: Sendable {
        /// Every row of the batch, recorded when it is stored.
        var all: [EnvelopeRecord]
        /// Those to open.
        var rows: [EnvelopeRecord]
        var owners: [UUID: UUID]
        var held: [UUID: ReceivedEnvelope]
        var marks: [UUID: GenerationMark]
        var outcomes: [UUID: Result<OpenedEnvelope, CryptoError>] = [:]
        /// The refusals kept on the rows to open (each reported once).
        var refusals: [UUID: EnvelopeRefusal] = [:]
    }

    /// A checked batch, to store: every row recorded, the envelopes that passed stored, the
    /// revoked senders' rows settled, the refusals reported now kept on their rows.
    struct CheckedEnvelopes: Sendable {
        var rows: [EnvelopeRecord]
        var stored: [ReceivedEnvelope]
        var settled: [EnvelopeRecord]
        var refusals: [UUID: EnvelopeRefusal] = [:]
    }

    /// The envelopes phase's batches through a ``Pipeline``: a batch is read from the store
    /// (what checking it needs), then opened on every core, then checked against
    /// ``EnvelopeAcceptance`` and reported, then stored; while one is opened, the next is read
    /// and the one before is stored.
    struct EnvelopeBatches {
        let engine: SyncEngine
        let identity: DeviceIdentity
        let senders: SenderKeys
        let rules: EnvelopeAcceptance
        let recorder: Recorder
        /// Rows opened so far (for progress).
        var opened = 0

        /// Runs every batch of rows `reading` hands to its `emit` through the stages.
        mutating func run(
            _ entry: inout PhaseReport,
            reading: (_ emit: @escaping ([EnvelopeRecord]) async throws -> Void) async throws -> Void
        ) async throws {
            let (engine, identity, senders, local) = (self.engine, self.identity, self.senders, self.engine.local)
            let pipeline = Pipeline<Opening, Opening, CheckedEnvelopes, Int>(
                transform: { batch in
                    var batch = batch
                    if !batch.rows.isEmpty {
                        batch.outcomes = try await engine.open(
                            batch.rows, identity: identity, senders: senders, held: batch.held, marks: batch.marks)
                    }
                    return batch
                },
                write: {
                    try await local.recordEnvelopeRows($0.rows, storing: $0.stored, settling: $0.settled)
                    try await local.recordEnvelopeRefusals($0.refusals)
                    return $0.stored.count
                })
            try await withoutActuallyEscaping(reading) { reading in
                try await pipeline.run(
                    reading: { emit in
                        func prepared(_ rows: [EnvelopeRecord]) async throws {
                            try await emit(try await prepare(rows, &entry))
                        }
                        try await withoutActuallyEscaping(prepared) { try await reading($0) }
                    },
                    check: { check($0, &entry) },
                    written: { stored in
                        // Counted once stored: a batch whose write failed is not reported as applied.
                        entry.applied += stored
                        recorder.report.envelopesOpened += stored
                    })
            }
        }

        /// Reads what checking `rows` needs (rows that may differ from the envelope stored):
        /// those of sessions held are to be opened; all are recorded when the batch is stored.
        func prepare(_ rows: [EnvelopeRecord], _ entry: inout PhaseReport) async throws -> Opening {
            let local = engine.local
            let sessions = Set(rows.map(\.sessionID))
            let owners = try await local.sessionOwners(of: sessions)
            let held = try await local.receivedEnvelopes(sessions: sessions)
            // A row equal to the envelope stored was checked when it was stored; one recorded as
            // refused for good (a revoked sender's), unchanged, is not checked again either.
            let settled = try await local.settledEnvelopeRows(rows)
            let candidates = rows.filter {
                !settled.contains($0.sessionID)
                    && held[$0.sessionID]?.envelope
                        != SecretEnvelope(
                            ephemeralPublicKey: $0.ephemeralPublicKey, encryptedSecret: $0.encryptedSecret)
            }
            let kept = candidates.filter { owners[$0.sessionID] != nil }
            entry.skipped += candidates.count - kept.count
            return Opening(
                all: rows, rows: kept, owners: owners, held: held,
                marks: kept.isEmpty ? [:] : try await local.generationMarks(of: Set(kept.map(\.sessionID))),
                refusals: try await local.envelopeRefusals(matching: kept))
        }

        /// Checks an opened batch against the rules and reports what is refused or does not open.
        mutating func check(_ batch: Opening, _ entry: inout PhaseReport) -> CheckedEnvelopes {
            var checked = CheckedEnvelopes(rows: batch.all, stored: [], settled: [])
            for item in batch.outcomes.values.compactMap({ try? $0.get() }).sorted(by: {
                $0.received.sessionID.canonicallyPrecedes($1.received.sessionID)
            }) {
                let session = item.received.sessionID
                switch rules.verdict(on: item, mark: batch.marks[session], owner: batch.owners[session]) {
                case .accept:
                    if !item.received.authenticated { recorder.report.trust?.unauthenticatedEnvelopes += 1 }
                    checked.stored.append(item.received)
                case .revokedSender:
                    // Refused once (its row is settled), counted; not a failure.
                    recorder.report.trust?.revokedSenders += 1
                    if let row = batch.rows.first(where: { $0.sessionID == session }) { checked.settled.append(row) }
                case .refused(let code, let message):
                    recorder.report.trust?.rejectedEnvelopes += 1
                    refuse(
                        SyncIssue(phase: .envelopes, code: code, rowID: session.canonical, message: message), batch,
                        &checked, &entry)
                }
            }
            let failures = batch.outcomes.compactMap { session, outcome -> (UUID, CryptoError)? in
                if case let .failure(error) = outcome { return (session, error) }
                return nil
            }.sorted { $0.0.canonicallyPrecedes($1.0) }
            for (session, error) in failures {
                if error == .unknownSender && rules.verified { recorder.report.trust?.rejectedEnvelopes += 1 }
                refuse(rules.issue(session: session, failure: error), batch, &checked, &entry)
            }
            opened += batch.outcomes.count
            recorder.emit(.envelopes, opened, 0)
            return checked
        }

        /// Reports a refusal once: a row refused before with the same code and unchanged since is
        /// counted by the caller without failing the pull again; a new refusal is kept on its row.
        func refuse(
            _ issue: SyncIssue, _ batch: Opening, _ checked: inout CheckedEnvelopes, _ entry: inout PhaseReport
        ) {
            guard let session = issue.rowID.flatMap(UUID.parse), batch.refusals[session]?.code != issue.code.rawValue
            else { return }
            entry.failed += 1
            entry.errors.append(issue)
            checked.refusals[session] = EnvelopeRefusal(code: issue.code.rawValue, message: issue.message)
        }
    }
}
