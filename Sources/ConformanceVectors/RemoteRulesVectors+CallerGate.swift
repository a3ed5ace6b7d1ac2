import RemoteRules

/// The CallerGate group of `UNBOUND-REMOTE-RULES-V1`: which device a call acts for, answered by
/// ``CallerRules`` as the embedded remote runs it.
extension RemoteRulesGroup {
    /// What the request's credential is to the server.
    public enum CallerCredential: String, Sendable, CaseIterable {
        /// The request carries none.
        case none
        /// No row holds its hash.
        case unregistered
        /// The caller registered it for the device, and it has not ended.
        case registered
        /// The caller's registered credential, sent in another form than 64 lowercase hex digits
        /// (in capitals): the server reads no credential.
        case malformed
        /// The caller registered it for the device, and it ended (the device was revoked).
        case ended
        /// Another user registered it.
        case anotherUser = "another_user"
    }

    /// What the trust log in force says of the credential's device.
    public enum CallerTrustLog: String, Sendable, CaseIterable {
        /// The user has no log.
        case none
        /// The user's log state has no epoch yet (whatever marks it holds): no log either.
        case noEpoch = "no_epoch"
        /// It certifies the device.
        case certifies
        /// It certified the device, then revoked it.
        case revokes
        /// It certifies another device only.
        case silent

        /// Whether the log certifies the device (`nil`: the user has no log).
        public var certified: Bool? {
            switch self {
            case .none, .noEpoch: nil
            case .certifies: true
            case .revokes, .silent: false
            }
        }
    }

    /// What the gate answers a call naming `named` (`nil`: none) that needs trust or not, from a
    /// request carrying `credential` for `device`: the verdict, the verdict on the same call
    /// naming the credential's device itself (`private.caller_device`), and whether the
    /// credential's device is the calling device.
    public static func callerGate(
        signedIn: Bool, credential: CallerCredential, device: String, named: String?, trusted: Bool,
        log: CallerTrustLog
    ) -> (verdict: CallerRules.Verdict, itself: CallerRules.Verdict, calling: Bool) {
        let (user, another) = ("the caller", "another user")
        let caller = signedIn ? user : nil
        let row: CallerRules.Credential? =
            switch credential {
            case .none, .unregistered, .malformed: nil
            case .registered: .init(device: device, user: user, ended: false)
            case .ended: .init(device: device, user: user, ended: true)
            case .anotherUser: .init(device: device, user: another, ended: false)
            }
        let credentialDevice = CallerRules.credentialDevice(row, caller: caller)
        func verdict(_ named: String?) -> CallerRules.Verdict {
            CallerRules.acting(
                named: named, trusted: trusted, caller: caller, credentialDevice: credentialDevice,
                certified: { log.certified })
        }
        let calling = CallerRules.callingDevice(credentialDevice: credentialDevice, certified: log.certified) != nil
        return (verdict(named), verdict(credentialDevice), calling)
    }

    /// Whether a CallerGate test gets its answer, word for word; `nil` when a field it needs is
    /// missing or malformed.
    static func callerGateMatches(_ test: Test) -> Bool? {
        guard let signedIn = test.signedIn, let credential = test.credential.flatMap(CallerCredential.init(rawValue:)),
            let device = test.device, let trusted = test.trusted,
            let log = test.trustLog.flatMap(CallerTrustLog.init(rawValue:)), test.answer != nil,
            let calling = test.calling, let itself = test.itself, CallerRules.isCanonicalID(device)
        else { return nil }
        let expected = callerGate(
            signedIn: signedIn, credential: credential, device: device, named: test.named, trusted: trusted, log: log)
        let refusal = expected.verdict.refusal
        return answers(test, refusal, allowed: "acts") && calling == expected.calling
            && itself == (expected.itself.refusal?.rawValue ?? "acts")
    }
}
