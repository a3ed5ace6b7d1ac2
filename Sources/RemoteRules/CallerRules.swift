/// Which device a call acts for (docs/trust.md, "Device credentials"): the device whose
/// credential the request carries, never one a call names, and for the calls that need trust,
/// one the trust log in force certifies. `private.credential_device`, `private.calling_device` and
/// `private.acting_device` answer the same (`testvectors/remote-rules-v1.json`, group CallerGate).
public enum CallerRules {
    /// The credential row whose hash the request's credential has.
    public struct Credential: Sendable, Hashable {
        /// The device it was registered for (its canonical id).
        public var device: String
        /// The user who registered it.
        public var user: String
        /// Whether it ended (the trust log revoked its device).
        public var ended: Bool

        /// A credential row as read.
        public init(device: String, user: String, ended: Bool) {
            (self.device, self.user, self.ended) = (device, user, ended)
        }
    }

    /// Why a call that acts for a device is refused.
    public enum Refusal: String, Sendable, Hashable, CaseIterable {
        /// The device id the call names is not a canonical lowercase UUID (22023).
        case malformedName = "malformed_name"
        /// No user signed in (the service role included).
        case signedOut = "signed_out"
        /// The request carries no credential of the user's that has not ended.
        case noCredential = "no_credential"
        /// The call names another device than the credential's, or none.
        case notItsName = "not_its_name"
        /// The call needs a certified device, and the trust log in force does not certify this one.
        case notCertified = "not_certified"
        /// The call's session is not run by the calling device (`private.require_session_desktop`).
        case notSessionDesktop = "not_session_desktop"
        /// Another device asked the call's request (`private.require_asker`).
        case notAsker = "not_asker"

        /// What the refusal says, as the SQL raises it.
        public var message: String {
            switch self {
            case .malformedName: "device_id must be a canonical lowercase UUID"
            case .signedOut: "this call needs a signed-in user"
            case .noCredential: "this call needs the credential of one of your devices that is not revoked"
            case .notItsName: "a device acts only in its own name"
            case .notCertified: "only a device your trust log certifies may make this call"
            case .notSessionDesktop: "only the session's own desktop may make this call"
            case .notAsker: "only the desktop that asked may make this call"
            }
        }

        /// The SQLSTATE: 22023 (invalid parameter value) for a malformed name, else 42501
        /// (insufficient privilege).
        public var sqlState: String { self == .malformedName ? "22023" : "42501" }

        /// The hint a client reads the refusal by (`nil`: none).
        public var hint: String? { self == .noCredential ? "device-credential-missing" : nil }
    }

    /// What a call that acts for a device gets.
    public enum Verdict: Sendable, Hashable {
        /// It acts for this device (the credential's).
        case acts(String)
        case refused(Refusal)

        /// The refusal, if the call is refused.
        public var refusal: Refusal? {
            if case .refused(let refusal) = self { return refusal }
            return nil
        }
    }

    /// The device the request's credential names: `row`'s (the row holding its hash; `nil`:
    /// none), when `caller` (the signed-in user; `nil`: none) registered it and it has not ended.
    public static func credentialDevice(_ row: Credential?, caller: String?) -> String? {
        guard let row, let caller, row.user == caller, !row.ended else { return nil }
        return row.device
    }

    /// The calling device: the credential's device, when the user has no trust log (`certified`
    /// `nil`) or the log in force certifies it.
    public static func callingDevice(credentialDevice: String?, certified: Bool?) -> String? {
        certified == false ? nil : credentialDevice
    }

    /// Whether `text` is a canonical lowercase UUID, the only form an id argument takes.
    public static func isCanonicalID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false).map(\.utf8)
        return groups.map(\.count) == [8, 4, 4, 4, 12]
            && groups.allSatisfy { $0.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) } }
    }

    /// The device a call naming `named` (`nil`: none) acts for: the credential's
    /// (`credentialDevice`, a canonical id as the server stores it), when the call names it. The name is judged first, then who signed in, then the credential; a `trusted`
    /// call then asks `certified` (`nil`: the user has no trust log), and only then.
    public static func acting(
        named: String?, trusted: Bool, caller: String?, credentialDevice: String?, certified: () throws -> Bool?
    ) rethrows -> Verdict {
        if let named, !isCanonicalID(named) { return .refused(.malformedName) }
        guard caller != nil else { return .refused(.signedOut) }
        guard let device = credentialDevice else { return .refused(.noCredential) }
        guard named == device else { return .refused(.notItsName) }
        if trusted, try callingDevice(credentialDevice: device, certified: certified()) == nil {
            return .refused(.notCertified)
        }
        return .acts(device)
    }

    /// Whether `device` may make a call on a session that `runBy` runs (the desktop of the
    /// caller's session of that id; `nil`: the caller has none): only the session's own desktop
    /// may (`private.require_session_desktop`).
    public static func sessionDesktop(runBy: String?, device: String) -> Refusal? {
        runBy == device ? nil : .notSessionDesktop
    }

    /// Whether `device` (the calling device, certified) may make a call on a request that
    /// `askers` asked (the requesting devices of the caller's approval request and question of
    /// that id; none: the caller has no such request, which the call itself refuses as unknown):
    /// only the desktop that asked may (`private.require_asker`).
    public static func asker(askers: [String], device: String) -> Refusal? {
        askers.allSatisfy { $0 == device } ? nil : .notAsker
    }
}
