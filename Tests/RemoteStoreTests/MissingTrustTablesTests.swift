import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization
import Testing

@Suite("Device-trust tables missing on the remote")
struct MissingTrustTablesTests {
    @Test("404 PGRST205 (and 42P01) from PostgREST arrive as .missingTable for every trust read")
    func missingTables() async throws {
        // PostgREST 12+ answers PGRST205; older versions let PostgreSQL's 42P01 through.
        let newer = try LoopbackHTTPServer { _ in
            .postgrestError(404, code: "PGRST205", message: "Could not find the table 'public.x' in the schema cache")
        }
        let older = try LoopbackHTTPServer { _ in
            .postgrestError(404, code: "42P01", message: "relation \"public.x\" does not exist")
        }
        await #expect(throws: RemoteStoreError.self) { _ = try await makeClient(older).listCertificates() }
        do {
            _ = try await makeClient(older).fetchIdentityKey()
        } catch let error as RemoteStoreError {
            #expect(error.code == .missingTable)
        }
        let server = newer
        let client = makeClient(server)
        let calls: [(String, () async throws -> Void)] = [
            ("fetchIdentityKey", { _ = try await client.fetchIdentityKey() }),
            ("listCertificates", { _ = try await client.listCertificates() }),
            ("listRevocations", { _ = try await client.listRevocations() }),
            ("trustLogRows", { _ = try await client.trustLogRows(epoch: 1, fromSeq: 0) }),
            ("trustLogGeneses", { _ = try await client.trustLogGeneses() }),
            ("trustLogWitnesses", { _ = try await client.trustLogWitnesses(epoch: 1) }),
            ("listPairingRequests", { _ = try await client.listPairingRequests() }),
            ("deletePairingRequest", { try await client.deletePairingRequest(id: UUID()) }),
        ]
        for (name, call) in calls {
            do {
                try await call()
                Issue.record("\(name) did not throw")
            } catch {
                #expect((error as? RemoteStoreError)?.code == .missingTable, "\(name): \(error)")
            }
        }
    }
}
