extension RemoteRulesSQLVectorTests {
    /// The fields of a test this check reads; the settings by column name.
    struct RuleTest: Decodable {
        let tcId: Int
        let comment: String
        let result: String
        let settings: [String: Bool]?
        let kind: String?
        let idleElsewhere: Double?
        let decision: String?
        let push: String?
        let mayQueue: Bool?
        let hadStatus: Bool?
        let before: String?
        let after: String?
        let raises: String?
        let newestKind: String?
        let newestAge: Double?
        let newestWaits: Bool?
        let action: String?
        let dueAfterNewest: Double?
        let from: String?
        let expired: Bool?
        let event: String?
        let verdict: String?
        let closedAs: String?
        let decisionMatches: Bool?
        let reopened: Int?
        let to: String?
        let queues: String?
        let reason: String?
        let generation: Int64?
        let expiresIn: Int64?
        let bodyBytes: Int?
        let bodyHeaderMatches: Bool?
        let refused: String?
        let delivered: Bool?
        let failed: Bool?
        let lastError: String?
        let attempts: Int?
        let outcome: String?
        let rank: Int?
        let settingOff: Bool?
        let registeredLater: Bool?
        let validToken: Bool?
        let trusted: Bool?
        let waitingDueIn: Double?
        let previousDueIn: Double?
        let replaces: Bool?
        let due: String?
        let runtime: String?
        let status: String?
        let priority: Int?
        let afterPrevious: Double?
        let rowOutcome: String?
        let rowUpdatedAt: Double?
        let rowId: Int64?
        let otherOutcome: String?
        let otherUpdatedAt: Double?
        let otherRowId: Int64?
        let speaks: String?
        let sessionId: String?
        let scheme: String?
        let request: Request?
        let timeSensitive: Bool?
        let badge: Int?
        let stamp: Int64?
        let operation: String?
        let showDetails: Bool?
        let runtimeOperation: String?
        let todo: Todo?
        let startedAt: Int64?
        let payload: String?
        let token: String?
        let tokenType: String?
        let platform: String?
        let environment: String?
        let activityId: String?
        let hasSession: Bool?
        let previousToken: String?
        let message: String?
        let registered: Bool?
        let mine: Bool?
        let ended: Bool?
        let sameCredential: Bool?
        let deviceOfAnother: Bool?
        let revokedInLog: Bool?
        let credentialInUse: Bool?
        let answer: String?
        let hint: String?
        let sqlState: String?
        let registeredInLastHour: Int?
        let room: Bool?
        let requestId: String?
        let handedOffTo: String?
        let askedByDevice: Bool?
        let counts: Bool?
        let heldBy: String?
        let holderValid: Bool?
        let placement: String?
        let currentEpoch: Int?
        let pendingEpoch: Int?
        let pendingAge: Int64?
        let inForce: Int?
        let marks: [Mark]?
        let device: String?
        let caller: String?
        let body: String?
        let signature: String?
        let now: Int64?
        let headSeq: Int64?
        let held: [HeldWitness]?
        let admission: String?
        let kept: [String]?
        let signedIn: Bool?
        let credential: String?
        let named: String?
        let trustLog: String?
        let itself: String?
        let calling: Bool?
        let runBy: String?
        let approvalBy: String?
        let questionBy: String?
        let signatureBytes: Int?
        let namesDevice: Bool?
        let controlHash: Bool?
        let control: String?
        let controlBytes: Int?
        let digestMatches: Bool?
        let call: String?
        let freshSignIn: Bool?
        let highestEpoch: Int?
        let pending: Bool?
        let legacyIdentity: Bool?
        let lastResetAge: Int64?
        let entryCount: Int?
        let backupCount: Int?
        let epoch: Int?
        let firstSeq: Int64?
        let hasHead: Bool?
        let epochStatus: String?
        let priorEpoch: Int?
        let withAccept: Bool?
        let answerVerdict: String?
        let namesReset: Bool?
    }

    /// A TrustedDevice test's mark.
    struct Mark: Decodable {
        let epoch: Int
        let device: String?
        let revokes: Bool
    }

    /// An AlertPayload test's request.
    struct Request: Decodable {
        let id: String
        let requesterDeviceId: String
        let generation: Int64
        let expiresAt: Int64
        let sealed: String
    }

    /// A LiveActivityPayload test's `todo_progress`, passed to the SQL as the JSON it is.
    struct Todo: Codable {
        let completed: Int
        let total: Int
        let current_task: String?
    }
}
