import Foundation
import LocalStore
import SecretCrypto
import SyncModel
import Testing

@testable import PostLoginSync

/// The envelope acceptance rules (docs/trust.md) as vectors: each case names an envelope that
/// opened, what the store knows of its session, the rules in force, and the verdict. No store,
/// no remote: `EnvelopeAcceptance` is a value.
@Suite("Envelope acceptance: the rules as vectors")
struct EnvelopeAcceptanceTests {
    static let owner = UUID(uuidString: "00000000-0000-4000-8000-00000000000a")!
    static let other = UUID(uuidString: "00000000-0000-4000-8000-00000000000b")!
    static let revoked = UUID(uuidString: "00000000-0000-4000-8000-00000000000c")!
    static let session = UUID(uuidString: "00000000-0000-4000-8000-000000000001")!

    /// One vector: the envelope (`generation`, `sender`: nil for version 1, `changes`: a
    /// version-1 envelope carrying another secret), the mark (`markGen` nil: never stored),
    /// the rules, and the expected verdict (`accept`, `revoked`, or a refusal's code).
    struct Vector: Sendable, CustomTestStringConvertible {
        var id: Int
        var comment: String
        var generation: UInt32 = 1
        var sender: UUID?
        var changes = false
        var markGen: UInt32?
        var markAuthenticated = false
        var markSender: UUID?
        var owner: UUID? = EnvelopeAcceptanceTests.owner
        var verified = false
        var ownerCertified = false
        var requireAuthenticated = false
        var result: String
        var testDescription: String { "#\(id) \(comment)" }
    }

    static let vectors: [Vector] = [
        Vector(id: 1, comment: "version 2 from the owner, first", sender: owner, result: "accept"),
        Vector(
            id: 2, comment: "version 2, same generation as the mark", generation: 3, sender: owner, markGen: 3,
            markAuthenticated: true, markSender: owner, result: "accept"),
        Vector(
            id: 3, comment: "below the high-water mark", generation: 2, sender: owner, markGen: 3,
            markAuthenticated: true, markSender: owner, result: "staleGeneration"),
        Vector(
            id: 4, comment: "mark survives: generation 1 after 5", generation: 1, markGen: 5,
            result: "staleGeneration"),
        Vector(
            id: 5, comment: "window edge: mark 1 + 1000 is accepted", generation: 1001, sender: owner, markGen: 1,
            result: "accept"),
        Vector(
            id: 6, comment: "one above the window", generation: 1002, sender: owner, markGen: 1,
            result: "generationJump"),
        Vector(
            id: 7, comment: "no mark counts as 1 for the window", generation: 1002, sender: owner,
            result: "generationJump"),
        Vector(id: 8, comment: "version 2 from another device than the owner", sender: other, result: "wrongSender"),
        Vector(
            id: 9, comment: "owner unknown, sender differs from the first sender", generation: 2, sender: other,
            markGen: 1, markAuthenticated: true, markSender: owner, owner: nil, result: "wrongSender"),
        Vector(
            id: 10, comment: "owner unknown, first sender", generation: 2, sender: owner, markGen: 1,
            markAuthenticated: true, markSender: owner, owner: nil, result: "accept"),
        Vector(id: 11, comment: "version 1, nothing stored, trust any", result: "accept"),
        Vector(
            id: 12, comment: "version 1 with authenticated required", requireAuthenticated: true,
            result: "unauthenticatedEnvelope"),
        Vector(
            id: 13, comment: "version 1 after an authenticated secret", markGen: 1, markAuthenticated: true,
            markSender: owner, result: "downgradeRefused"),
        Vector(
            id: 14, comment: "version 1 from a certified owner", verified: true, ownerCertified: true,
            result: "downgradeRefused"),
        Vector(id: 15, comment: "version 1, certified owner but trust any", ownerCertified: true, result: "accept"),
        Vector(
            id: 16, comment: "version 1 replacing a secret, verified", generation: 2, changes: true, markGen: 1,
            verified: true, result: "unauthenticatedReplacement"),
        Vector(
            id: 17, comment: "version 1 replacing a secret, trust any", generation: 2, changes: true, markGen: 1,
            result: "accept"),
        Vector(
            id: 18, comment: "version 1, same secret, verified", generation: 1, markGen: 1, verified: true,
            result: "accept"),
        Vector(
            id: 19, comment: "a revoked sender's envelope is settled, before any other rule", generation: 0,
            sender: revoked, markGen: 4, verified: true, result: "revoked"),
    ]

    @Test("every vector", arguments: vectors)
    func vector(_ v: Vector) throws {
        let rules = EnvelopeAcceptance(
            verified: v.verified, certified: v.ownerCertified ? [Self.owner] : [],
            revoked: v.verified ? [Self.revoked] : [], requireAuthenticated: v.requireAuthenticated, window: 1000)
        let key = X25519PrivateKey()
        let envelope = try SecretEnvelope.seal(SessionSecret(), for: key.publicKey, sessionID: SessionID(Self.session))
        let opened = SyncEngine.OpenedEnvelope(
            received: ReceivedEnvelope(
                sessionID: Self.session, envelope: envelope, senderDeviceID: v.sender, generation: v.generation,
                authenticated: v.sender != nil),
            changesSecret: v.changes)
        let mark = v.markGen.map {
            GenerationMark(
                sessionID: Self.session, generation: $0, authenticated: v.markAuthenticated,
                senderDeviceID: v.markSender)
        }
        let verdict = rules.verdict(on: opened, mark: mark, owner: v.owner)
        switch verdict {
        case .accept: #expect(v.result == "accept")
        case .revokedSender: #expect(v.result == "revoked")
        case .refused(let code, let message):
            #expect(code.rawValue == v.result)
            #expect(message.hasSuffix("it was not stored"))
        }
    }

    /// A sender the trust log revoked and certified again is judged like any other.
    @Test func recertifiedSenderIsNotRevoked() throws {
        let rules = EnvelopeAcceptance(
            verified: true, certified: [Self.owner], revoked: [], requireAuthenticated: false, window: 1000)
        let key = X25519PrivateKey()
        let envelope = try SecretEnvelope.seal(SessionSecret(), for: key.publicKey, sessionID: SessionID(Self.session))
        let opened = SyncEngine.OpenedEnvelope(
            received: ReceivedEnvelope(
                sessionID: Self.session, envelope: envelope, senderDeviceID: Self.owner, generation: 1,
                authenticated: true),
            changesSecret: false)
        #expect(rules.verdict(on: opened, mark: nil, owner: Self.owner) == .accept)
    }

    /// What an envelope that did not open is reported as.
    @Test func failuresToOpen() {
        let any = EnvelopeAcceptance(
            verified: false, certified: [], revoked: [], requireAuthenticated: false, window: 1)
        let verified = EnvelopeAcceptance(
            verified: true, certified: [], revoked: [], requireAuthenticated: false, window: 1)
        #expect(any.issue(session: Self.session, failure: .unknownSender).code == .unknownSender)
        #expect(verified.issue(session: Self.session, failure: .unknownSender).code == .uncertifiedSender)
        #expect(any.issue(session: Self.session, failure: .authenticationFailure).code == .envelopeUnreadable)
        #expect(verified.issue(session: Self.session, failure: .authenticationFailure).rowID == Self.session.canonical)
    }
}
