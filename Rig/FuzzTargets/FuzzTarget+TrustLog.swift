import DeviceTrust
import Foundation
import SecretCrypto

// The trust log's parsers (docs/trust-log.md): an epoch's rows through the verifier, with the
// server's rules as a second implementation to hold it to, and a witness body.
extension FuzzTarget {
    /// An epoch's rows: user id, epoch, then one stored entry (base64) per line.
    ///
    /// Invariants: the verifier refuses only with ``DeviceTrustError`` at a position within the
    /// rows (its typed throw); a log it accepts has one hash per row and its head at the last
    /// row, verifies to the same head again when extended row by row from its genesis, and passes
    /// the server's rules **E** row by row (without the clock window): a log a client trusts is
    /// one the server would have stored.
    static func trustLog(_ fields: [String]) -> FuzzOutcome {
        guard let user = UUID(uuidString: field(fields, 0)), let epoch = UInt32(field(fields, 1)), fields.count > 2
        else { return .rejected }
        let rows = Array(fields.dropFirst(2))
        let state: TrustLogState
        let hashes: [[UInt8]]
        do {
            (state, hashes) = try TrustLogVerifier.verify(rows, userID: user, epoch: epoch)
        } catch {
            guard let seq = error.seq, seq < UInt64(rows.count) else {
                violated(.trustLog, "a failure names no position, or one beyond the rows")
            }
            return .rejected
        }
        guard hashes.count == rows.count, state.headSeq == UInt64(rows.count - 1),
            Array(state.headHash) == hashes.last
        else { violated(.trustLog, "an accepted log's head is not its last row") }
        var again: TrustLogState
        do {
            again = try TrustLogVerifier.verify([rows[0]], userID: user, epoch: epoch).state
            for row in rows.dropFirst() { again = try TrustLogVerifier.extend(again, with: [row]).state }
        } catch {
            violated(.trustLog, "an accepted log does not verify when extended row by row")
        }
        guard again.headHash == state.headHash else {
            violated(.trustLog, "extending row by row reaches another head")
        }
        var head: TrustLogServerRules.Head?
        for row in rows {
            do {
                head = try TrustLogServerRules.check(row, backup: nil, userID: user, epoch: epoch, head: head, now: nil)
                    .head
            } catch {
                violated(.trustLog, "the server's rules refuse a row of a log the verifier accepts")
            }
        }
        return .accepted
    }

    /// A witness body as stored (base64): parsed strictly; an accepted one re-encodes to itself.
    static func trustLogWitness(_ text: String) -> FuzzOutcome {
        do {
            let witness = try TrustLogWitness.parse(text)
            guard ByteEncoding.base64(witness.bytes()) == text else {
                violated(.trustLogWitness, "an accepted witness does not re-encode to the same text")
            }
            return .accepted
        } catch {
            return .rejected
        }
    }
}
