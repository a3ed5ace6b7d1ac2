import Foundation
import LocalStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import TestStack
import Testing

@testable import PostLoginSync

/// A store whose pinned trust log was damaged on disk (issue 68): one byte of a key changed is a
/// typed trust failure that says what to do, never a trap and never trusted.
@Suite("A damaged trust-log pin")
struct CorruptPinTests {
    /// Stores `pin` with its state replaced by `state`.
    static func store(_ pin: TrustLogPin, state: Data, in store: DeviceStore) async throws {
        var changed = pin
        changed.state = state
        try await store.saveTrustLogPin(changed, entries: [], replacing: false)
    }

    @Test(
        "one byte of the pinned identity key changed: sync fails closed with trustLogInvalid and what to do",
        arguments: Backend.variants)
    func oneByteChanged(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let pin = try #require(try await w.phone.store.trustLogPin())
        try await Self.store(pin, state: try DamagedPin.identityKeyChanged(pin.state), in: w.phone.store)
        let report = try await w.phone.engine.pull()
        let issue = report.errors.first { $0.code == .trustLogInvalid }
        #expect(issue != nil, "\(report.errors)")
        #expect(issue?.message.contains("damaged: its checksum does not match") == true, "\(String(describing: issue))")
        #expect(issue?.message.contains("pair this device again from a new store") == true)
        #expect(report.envelopesOpened == 0)
        // A key of the wrong length, with a checksum that matches, is refused as well.
        var outer = try #require(try JSONSerialization.jsonObject(with: pin.state) as? [String: Any])
        let stored = try #require(Data(base64Encoded: outer["state"] as? String ?? ""))
        var state = try #require(try JSONSerialization.jsonObject(with: stored) as? [String: Any])
        state["identityKey"] = Data(repeating: 1, count: 31).base64EncodedString()
        let inner = try JSONSerialization.data(withJSONObject: state, options: .sortedKeys)
        outer["state"] = inner.base64EncodedString()
        outer["sha256"] = ByteEncoding.hex(SHA256.hash(inner))
        try await Self.store(pin, state: try JSONSerialization.data(withJSONObject: outer), in: w.phone.store)
        let short = try await w.phone.engine.pull()
        #expect(
            short.errors.contains { $0.code == .trustLogInvalid && $0.message.contains("a key in it is malformed") },
            "\(short.errors)")
        // The pin as it was: all is well again.
        try await Self.store(pin, state: pin.state, in: w.phone.store)
        #expect(try await w.phone.engine.pull().errors.isEmpty)
    }
}
