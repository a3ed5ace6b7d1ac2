/// Whether a device may register its credential (`register_device`; docs/trust.md, "Device
/// credentials"), as functions of what the server read: `private.rule_device_registration` and
/// `private.rule_new_device_room` answer the same (`testvectors/remote-rules-v1.json`, group
/// DeviceRegistration).
public enum CredentialRules {
    /// How many new devices a user may register an hour: a bound on the rate, not on the total,
    /// so a stolen login leaves nothing that outlasts it.
    public static let maxNewDevicesPerHour = 20

    /// The credential row already registered for the device's id.
    public struct Registered: Sendable, Hashable {
        /// Whether it is the calling user's.
        public var mine: Bool
        /// Whether it ended (the device was revoked).
        public var ended: Bool
        /// Whether it holds the credential the call presents.
        public var sameCredential: Bool

        /// A registered row as read.
        public init(mine: Bool, ended: Bool, sameCredential: Bool) {
            (self.mine, self.ended, self.sameCredential) = (mine, ended, sameCredential)
        }
    }

    /// Why a registration is refused (42501, insufficient privilege; `limit`: 54000).
    public enum Refusal: String, Sendable, Hashable, CaseIterable {
        case notYours = "not_yours"
        case revoked
        case credentialTaken = "credential_taken"
        case credentialOfAnother = "credential_of_another"
        case limit

        /// What the refusal says, and what to do next.
        public var message: String {
            switch self {
            case .notYours: "the device is not one of yours"
            case .revoked:
                "this device was revoked: the account takes nothing more from it; pair a new store "
                    + "(`sync-cli init` in another directory, then `sync-cli trust join`)"
            case .credentialTaken:
                "another credential is registered for this device's id, so the remote cannot tell this device "
                    + "from whoever registered it: revoke this device from a trusted one (`sync-cli trust revoke`) "
                    + "and pair a new store"
            case .credentialOfAnother: "this credential belongs to another device"
            case .limit:
                "this account registered too many new devices in the last hour: try again later (if you did "
                    + "not register them, someone holds your login: change your password)"
            }
        }

        /// The SQLSTATE the refusal is raised with: 54000 (program limit exceeded) for `limit`,
        /// else 42501 (insufficient privilege).
        public var sqlState: String { self == .limit ? "54000" : "42501" }

        /// The hint a client reads the refusal by (`nil`: none).
        public var hint: String? {
            switch self {
            case .revoked: "device-revoked"
            case .credentialTaken: "device-credential-taken"
            case .limit: "device-limit"
            case .notYours, .credentialOfAnother: nil
            }
        }
    }

    /// What a registration does.
    public enum Answer: Sendable, Hashable {
        /// The device's credential is registered already: nothing to write.
        case known
        /// A new credential row is written (``roomForNewDevice(registeredInLastHour:)`` decides
        /// whether there is room, when it is written).
        case register
        case refused(Refusal)
    }

    /// A registration for a device whose id has the `registered` row (`nil`: none), whose device
    /// row is `deviceOfAnother` user's or not, which the trust log revoked in any epoch
    /// (`revokedInLog`), presenting a credential another device's row holds
    /// (`credentialInUse`) or not.
    public static func registration(
        registered: Registered?, deviceOfAnother: Bool, revokedInLog: Bool, credentialInUse: Bool
    ) -> Answer {
        if let registered {
            if !registered.mine { return .refused(.notYours) }
            if registered.ended { return .refused(.revoked) }
            return registered.sameCredential ? .known : .refused(.credentialTaken)
        }
        if deviceOfAnother { return .refused(.notYours) }
        if revokedInLog { return .refused(.revoked) }
        return credentialInUse ? .refused(.credentialOfAnother) : .register
    }

    /// Whether a user who registered `registeredInLastHour` devices (not ended) in the last hour
    /// may register one more.
    public static func roomForNewDevice(registeredInLastHour: Int) -> Bool {
        registeredInLastHour < maxNewDevicesPerHour
    }
}
