import DeviceTrust
import RemoteRules

/// The TrustLogCall group of `UNBOUND-REMOTE-RULES-V1`: what the trust log's writing calls refuse
/// before they read an entry, answered by
/// ``TrustLogCallRules/refusal(_:freshSignIn:state:entries:backups:epoch:firstSeq:)`` as the
/// embedded remote asks it.
extension RemoteRulesGroup {
    /// Whether a TrustLogCall test gets its answer (`allowed`: the call reads its entries, or the
    /// refusal with its words); `nil` when a field it needs is missing or malformed.
    static func trustLogCallMatches(_ test: Test) -> Bool? {
        guard let call = test.call.flatMap(TrustLogCallRules.Call.init(rawValue:)), let fresh = test.freshSignIn,
            let highest = test.highestEpoch, let pending = test.pending, let legacy = test.legacyIdentity,
            let entries = test.entryCount, let answer = test.answer
        else { return nil }
        let state = TrustLogCallRules.State(
            current: test.currentEpoch, highestEpoch: highest, pending: pending, legacyIdentity: legacy,
            lastResetAge: test.lastResetAge, headSeq: test.headSeq)
        guard
            let refusal = TrustLogCallRules.refusal(
                call, freshSignIn: fresh, state: state, entries: entries, backups: test.backupCount, epoch: test.epoch,
                firstSeq: test.firstSeq)
        else { return answer == "allowed" && test.message == nil && test.sqlState == nil }
        return answer == refusal.reason.rawValue && test.message == refusal.message
            && test.sqlState == refusal.sqlState && test.hint == nil
    }
}

extension RemoteRulesGroup {
    /// A TrustEpochStatus answer's word.
    public static func word(_ status: TrustLogServerRules.EpochStatus) -> String {
        switch status {
        case .open: "open"
        case .pendingOrClosed: "pending_or_closed"
        case .notCurrent: "not_current"
        }
    }

    /// Whether a TrustEpochStatus test gets its answer from
    /// ``TrustLogServerRules/epochStatus(named:current:pending:hasHead:)``; `nil` when a field it
    /// needs is missing.
    static func trustEpochStatusMatches(_ test: Test) -> Bool? {
        guard let named = test.epoch, let hasHead = test.hasHead, let expected = test.epochStatus else { return nil }
        let status = TrustLogServerRules.epochStatus(
            named: named, current: test.currentEpoch, pending: test.pendingEpoch, hasHead: hasHead)
        return word(status) == expected
    }
}

extension RemoteRulesGroup {
    /// Whether a TrustPlacement test gets its answer (`allowed`, or the refusal with its words)
    /// from ``TrustLogCallRules/placementRefusal(_:prior:current:withAccept:verdict:namesReset:)``;
    /// `nil` when a field it needs is missing or malformed.
    static func trustPlacementMatches(_ test: Test) -> Bool? {
        guard let placement = test.placement.flatMap(TrustLogCallRules.Placement.init(rawValue:)),
            let withAccept = test.withAccept, let names = test.namesReset, let answer = test.answer
        else { return nil }
        var verdict: TrustLogCallRules.Verdict?
        if let word = test.answerVerdict {
            guard let known = TrustLogCallRules.Verdict(rawValue: word) else { return nil }
            verdict = known
        }
        guard
            let refusal = TrustLogCallRules.placementRefusal(
                placement, prior: test.priorEpoch, current: test.currentEpoch, withAccept: withAccept,
                verdict: verdict, namesReset: names)
        else { return answer == "allowed" && test.message == nil && test.sqlState == nil }
        return answer == refusal.reason.rawValue && test.message == refusal.message
            && test.sqlState == refusal.sqlState && test.hint == nil
    }
}
