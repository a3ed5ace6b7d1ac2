import RemoteContract
import SyncModel

/// Which push-token registration the server refuses, before it reads a row
/// (`private.rule_push_token_refusal`), and where a registered token goes
/// (`private.rule_push_token_placement`; docs/coordination.md, "Push tokens"): the same answers
/// and words for the same arguments (`testvectors/remote-rules-v1.json`, groups PushTokenRefusal
/// and PushTokenPlacement).
public enum PushTokenRules {
    /// The first field a registration gets wrong, in the order the server checks them.
    public enum Refusal: String, Sendable, Hashable, CaseIterable {
        case token
        case tokenType = "token_type"
        case environment
        case platform
        case liveActivityFields = "live_activity_fields"
        case deviceFields = "device_fields"
        case activityID = "activity_id"
        case previousToken = "previous_token"

        /// What the refusal says (22023, invalid parameter value).
        public var message: String {
            switch self {
            case .token: "token must be 1 to 512 characters of A-Z a-z 0-9 . _ : -"
            case .tokenType: "token_type must be device or live_activity"
            case .environment: "environment must be development or production"
            case .platform: "platform must be 1 to 20 lowercase letters"
            case .liveActivityFields: "a live_activity token needs activity_id and session_id"
            case .deviceFields: "a device token takes no activity_id or session_id"
            case .activityID: "activity_id must be 1 to 200 characters without control characters"
            case .previousToken: "previous_token must be 1 to 512 characters of A-Z a-z 0-9 . _ : -"
            }
        }
    }

    /// The refusal of a registration of `token` (`type` `nil`: `device`; `platform` `nil`: `ios`;
    /// `environment` `nil`: `production`), with `activityID`, a session or not, and the
    /// `previous` token it replaces; `nil`: none. Lengths are counted in Unicode scalars, and a
    /// control character is one of U+0000 to U+001F and U+007F to U+009F, whatever the server's
    /// locale.
    public static func refusal(
        token: String, type: String?, platform: String?, environment: String?, activityID: String?,
        hasSession: Bool, previous: String?
    ) -> Refusal? {
        let type = type ?? PushTokenType.device.rawValue
        if !PushTokenText.isValid(token) { return .token }
        if PushTokenType(rawValue: type) == nil { return .tokenType }
        if PushEnvironment(rawValue: environment ?? PushEnvironment.production.rawValue) == nil { return .environment }
        if !PushTokenText.isValidPlatform(platform ?? "ios") { return .platform }
        if type == PushTokenType.liveActivity.rawValue, activityID == nil || !hasSession { return .liveActivityFields }
        if type == PushTokenType.device.rawValue, activityID != nil || hasSession { return .deviceFields }
        if let activityID, !PushTokenText.isValidIdentifier(activityID) { return .activityID }
        if let previous, !PushTokenText.isValid(previous) { return .previousToken }
        return nil
    }

    /// Who holds a token a device registers, as the server reads its row.
    public enum Holder: String, Sendable, Hashable, CaseIterable {
        /// No row holds it.
        case none
        case thisDevice = "this_device"
        /// Another device of the same user.
        case anotherDevice = "another_device"
        case anotherUser = "another_user"
    }

    /// Where a registration's token goes, once every argument passed
    /// (``refusal(token:type:platform:environment:activityID:hasSession:previous:)``).
    public enum Placement: String, Sendable, Hashable, CaseIterable {
        /// The registration writes the token for its device.
        case register
        /// The token stays where it is, and the registration answers as if it had written it:
        /// the answer never says whether a token string is registered.
        case stays
    }

    /// Where a token held by `holder` goes (`valid`: whether that row is valid): a valid token
    /// another device holds, another user's included, stays there until its owner or the
    /// delivery worker invalidates it; otherwise the registration writes it.
    public static func placement(heldBy holder: Holder, valid: Bool) -> Placement {
        switch holder {
        case .none, .thisDevice: .register
        case .anotherDevice, .anotherUser: valid ? .stays : .register
        }
    }
}
