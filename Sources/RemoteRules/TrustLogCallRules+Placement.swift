/// What the trust log's writing calls refuse of an entry that passed rules **E**, for where it
/// goes (docs/trust-log.md, "The remote"): a genesis's prior epoch, and a reset answer's verdict
/// and the reset it names. `private.rule_trust_placement_refusal` says the same, and the SQL
/// functions ask it through `private.tl_refuse_placement`; `testvectors/remote-rules-v1.json`
/// (TrustPlacement) holds both to the same answers and words.
extension TrustLogCallRules {
    /// Where a checked entry goes.
    public enum Placement: String, Sendable, Hashable, CaseIterable {
        /// Epoch 1's genesis, in `start_trust_log`.
        case start
        /// A reset's genesis, in `request_identity_reset`.
        case reset
        /// The accept from the current epoch that comes with a reset.
        case accept
        /// An entry after a genesis, in `append_trust_entries` or `start_trust_log`.
        case append
    }

    /// A reset answer's verdict (its byte: 1 veto, 2 accept).
    public enum Verdict: String, Sendable, Hashable, CaseIterable {
        case veto
        case accept
    }

    /// Why a checked entry is refused where it goes.
    public enum PlacementReason: String, Sendable, Hashable, CaseIterable {
        /// Epoch 1's genesis names a prior epoch other than 0.
        case genesisPrior = "genesis_prior"
        /// A reset's genesis names a prior other than the current epoch (1 while none is current).
        case resetPrior = "reset_prior"
        /// A reset comes with an accept while no epoch is current to give it.
        case noCurrentEpoch = "no_current_epoch"
        /// The accept is not an accept naming this reset's epoch and genesis.
        case acceptUnnamed = "accept_unnamed"
        /// An accept in an append: it goes only with its reset.
        case acceptAppended = "accept_appended"
        /// A veto that names no pending reset.
        case vetoUnnamed = "veto_unnamed"
    }

    /// A refusal of an entry where it goes, in the SQL's words.
    public struct PlacementRefusal: RuleRefusal, Hashable {
        public let reason: PlacementReason

        public var message: String {
            switch reason {
            case .genesisPrior: "epoch 1's genesis names prior epoch 0"
            case .resetPrior: "a reset names the current epoch as its prior"
            case .noCurrentEpoch: "no epoch is current to accept a reset"
            case .acceptUnnamed: "the accept must name this reset"
            case .acceptAppended: "an accept is appended only with request_identity_reset"
            case .vetoUnnamed: "the veto names no pending reset"
            }
        }

        /// 55000 for the log's state (no current epoch, no such pending reset), else 22023.
        public var sqlState: String {
            switch reason {
            case .noCurrentEpoch, .vetoUnnamed: "55000"
            case .genesisPrior, .resetPrior, .acceptUnnamed, .acceptAppended: "22023"
            }
        }
    }

    /// Why an entry that passed rules **E** is refused where it goes, or `nil`.
    ///
    /// - Parameters:
    ///   - placement: Where the entry goes.
    ///   - prior: A genesis's prior epoch (`start`, `reset`; `nil` is never right).
    ///   - current: The current epoch (`reset`; `nil`: none).
    ///   - withAccept: The reset comes with an accept (`reset`).
    ///   - verdict: The entry's verdict when it is a reset answer (`accept`, `append`); `nil`:
    ///     another type.
    ///   - namesReset: The answer names the reset it answers, by epoch and genesis hash: this
    ///     reset (`accept`), the pending one (`append`; `false` when none is pending).
    public static func placementRefusal(
        _ placement: Placement, prior: UInt32? = nil, current: UInt32? = nil, withAccept: Bool = false,
        verdict: Verdict? = nil, namesReset: Bool = false
    ) -> PlacementRefusal? {
        let reason: PlacementReason? =
            switch placement {
            case .start: prior != 0 ? .genesisPrior : nil
            case .reset:
                if prior != (current ?? 1) {
                    .resetPrior
                } else if withAccept, current == nil {
                    .noCurrentEpoch
                } else {
                    nil
                }
            case .accept: verdict != .accept || !namesReset ? .acceptUnnamed : nil
            case .append:
                switch verdict {
                case nil: nil
                case .accept: .acceptAppended
                case .veto: namesReset ? nil : .vetoUnnamed
                }
            }
        return reason.map(PlacementRefusal.init(reason:))
    }
}
