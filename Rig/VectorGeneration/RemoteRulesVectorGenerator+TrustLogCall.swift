import ConformanceVectors
import DeviceTrust
import RemoteRules

/// The TrustLogCall group: what the trust log's writing calls refuse before they read an entry
/// (``TrustLogCallRules``).
extension RemoteRulesVectorGenerator {
    /// A user's trust-log state, as the call's lock leaves it, with what it is.
    typealias LogState = (words: String, state: TrustLogCallRules.State)

    static let logStates: [LogState] = [
        (
            "no log",
            .init(current: nil, highestEpoch: 0, pending: false, legacyIdentity: false, lastResetAge: nil, headSeq: nil)
        ),
        (
            "a legacy identity, no log",
            .init(current: nil, highestEpoch: 0, pending: false, legacyIdentity: true, lastResetAge: nil, headSeq: nil)
        ),
        (
            "epoch 1 with head 4",
            .init(current: 1, highestEpoch: 1, pending: false, legacyIdentity: false, lastResetAge: nil, headSeq: 4)
        ),
        (
            "epoch 1 with head 4, a reset asked 3,600 s ago pending",
            .init(current: 1, highestEpoch: 2, pending: true, legacyIdentity: false, lastResetAge: 3_600, headSeq: 4)
        ),
        (
            "epoch 1 with head 4, a reset asked 86,399 s ago vetoed",
            .init(current: 1, highestEpoch: 2, pending: false, legacyIdentity: false, lastResetAge: 86_399, headSeq: 4)
        ),
        (
            "epoch 1 with head 4, a reset asked 86,400 s ago vetoed",
            .init(current: 1, highestEpoch: 2, pending: false, legacyIdentity: false, lastResetAge: 86_400, headSeq: 4)
        ),
        (
            "a legacy identity, a reset asked 60 s ago pending",
            .init(current: nil, highestEpoch: 2, pending: true, legacyIdentity: true, lastResetAge: 60, headSeq: nil)
        ),
        (
            "epoch 2 with head 0, in force after a reset",
            .init(current: 2, highestEpoch: 2, pending: false, legacyIdentity: false, lastResetAge: 300_000, headSeq: 0)
        ),
        (
            "epoch 1 without a head row (no writer leaves it; a restore could)",
            .init(current: 1, highestEpoch: 1, pending: false, legacyIdentity: false, lastResetAge: nil, headSeq: nil)
        ),
    ]

    /// Starts, appends and resets (with and without an accept), fresh and not, on each state;
    /// the entries' and backups' counts at and past their bounds.
    static func trustLogCallTests() -> [OutputTest] {
        var tests: [OutputTest] = []
        for (words, state) in logStates {
            for fresh in [true, false] {
                tests.append(trustLogCallTest(.start, fresh: fresh, words, state))
                tests.append(trustLogCallTest(.reset, fresh: fresh, words, state))
                tests.append(trustLogCallTest(.resetAccept, fresh: fresh, words, state))
            }
            let epoch = state.current ?? 1
            let next = (state.headSeq ?? 0) + 1
            for (named, first) in [(epoch, next), (epoch, next - 1), (epoch, next + 1), (5, 1)] as [(UInt32, UInt64)] {
                tests.append(trustLogCallTest(.append, fresh: false, words, state, epoch: named, firstSeq: first))
            }
        }
        let (none, log) = (logStates[0], logStates[2])
        for (entries, backups) in [(0, nil), (9, nil), (10, nil), (9, 9), (2, 1), (1, 2)] as [(Int, Int?)] {
            tests.append(
                trustLogCallTest(.start, fresh: true, none.words, none.state, entries: entries, backups: backups))
        }
        for (entries, backups) in [(0, nil), (8, nil), (9, nil), (8, 8), (8, 7), (1, 0)] as [(Int, Int?)] {
            tests.append(
                trustLogCallTest(
                    .append, fresh: false, log.words, log.state, entries: entries, backups: backups, epoch: 1,
                    firstSeq: 5))
        }
        return tests
    }

    static func trustLogCallTest(
        _ call: TrustLogCallRules.Call, fresh: Bool, _ words: String, _ state: TrustLogCallRules.State,
        entries: Int = 1, backups: Int? = nil, epoch: UInt32? = nil, firstSeq: UInt64? = nil
    ) -> OutputTest {
        let refusal = TrustLogCallRules.refusal(
            call, freshSignIn: fresh, state: state, entries: entries, backups: backups, epoch: epoch, firstSeq: firstSeq
        )
        let carried = "\(entries) entries, \(backups.map { "\($0) backups" } ?? "no backups")"
        let named = epoch.map { ", epoch \($0) from seq \(firstSeq ?? 0)" } ?? ""
        var test = OutputTest(
            comment: "\(call.rawValue) (\(carried)\(named)), \(fresh ? "a fresh" : "a stale") sign-in, \(words)",
            flags: [refusal == nil ? "Allowed" : "Refused"])
        (test.call, test.freshSignIn, test.entryCount, test.backupCount, test.epoch, test.firstSeq) = (
            call.rawValue, fresh, entries, backups, epoch, firstSeq
        )
        (test.currentEpoch, test.highestEpoch, test.pending, test.legacyIdentity) = (
            state.current, state.highestEpoch, state.pending, state.legacyIdentity
        )
        (test.lastResetAge, test.headSeq) = (state.lastResetAge, state.headSeq)
        (test.answer, test.message, test.sqlState) = (
            refusal?.reason.rawValue ?? "allowed", refusal?.message, refusal?.sqlState
        )
        return test
    }
}

extension RemoteRulesVectorGenerator {
    /// Every epoch an append may name (below, at, between and above the current and pending ones)
    /// against no current epoch, one and three, no pending reset, one to 2 and one to 4, with and
    /// without rows.
    static func trustEpochStatusTests() -> [OutputTest] {
        var tests: [OutputTest] = []
        for current in [nil, 1, 3] as [UInt32?] {
            for pending in [nil, 2, 4] as [UInt32?] {
                for named in 1...5 as ClosedRange<UInt32> {
                    for hasHead in [false, true] {
                        let status = TrustLogServerRules.epochStatus(
                            named: named, current: current, pending: pending, hasHead: hasHead)
                        let word = RemoteRulesGroup.word(status)
                        var test = OutputTest(
                            comment:
                                "an append to epoch \(named) \(hasHead ? "with" : "without") rows; current epoch "
                                + "\(current.map(String.init) ?? "none"), pending \(pending.map(String.init) ?? "none")",
                            flags: [word.split(separator: "_").map(\.capitalized).joined()])
                        (test.epoch, test.currentEpoch, test.pendingEpoch, test.hasHead, test.epochStatus) = (
                            named, current, pending, hasHead, word
                        )
                        tests.append(test)
                    }
                }
            }
        }
        return tests
    }
}

extension RemoteRulesVectorGenerator {
    /// Each placement with the facts it reads: a start's genesis naming prior 0, 1 and 2; a
    /// reset's naming 0 to 3 against no current epoch, 1 and 2, with and without an accept; an
    /// accept and an appended entry of each type and verdict, naming the reset and not.
    static func trustPlacementTests() -> [OutputTest] {
        var tests: [OutputTest] = []
        for prior in 0...2 as ClosedRange<UInt32> {
            tests.append(trustPlacementTest(.start, prior: prior))
        }
        for current in [nil, 1, 2] as [UInt32?] {
            for prior in 0...3 as ClosedRange<UInt32> {
                for withAccept in [false, true] {
                    tests.append(trustPlacementTest(.reset, prior: prior, current: current, withAccept: withAccept))
                }
            }
        }
        for placement in [TrustLogCallRules.Placement.accept, .append] {
            for verdict in [nil] + TrustLogCallRules.Verdict.allCases.map(Optional.some) {
                for names in [false, true] {
                    tests.append(trustPlacementTest(placement, verdict: verdict, names: names))
                }
            }
        }
        return tests
    }

    static func trustPlacementTest(
        _ placement: TrustLogCallRules.Placement, prior: UInt32? = nil, current: UInt32? = nil,
        withAccept: Bool = false, verdict: TrustLogCallRules.Verdict? = nil, names: Bool = false
    ) -> OutputTest {
        let refusal = TrustLogCallRules.placementRefusal(
            placement, prior: prior, current: current, withAccept: withAccept, verdict: verdict, namesReset: names)
        let facts =
            switch placement {
            case .start: "naming prior epoch \(prior ?? 0)"
            case .reset:
                "naming prior epoch \(prior ?? 0), current epoch \(current.map(String.init) ?? "none"), "
                    + (withAccept ? "with an accept" : "without an accept")
            case .accept, .append:
                (verdict.map { "a \($0.rawValue)" } ?? "not a reset answer") + (names ? ", naming the reset" : "")
            }
        var test = OutputTest(
            comment: "\(placement.rawValue): \(facts)", flags: [refusal == nil ? "Allowed" : "Refused"])
        (test.placement, test.priorEpoch, test.currentEpoch, test.withAccept) = (
            placement.rawValue, prior, current, withAccept
        )
        (test.answerVerdict, test.namesReset) = (verdict?.rawValue, names)
        (test.answer, test.message, test.sqlState) = (
            refusal?.reason.rawValue ?? "allowed", refusal?.message, refusal?.sqlState
        )
        return test
    }
}
