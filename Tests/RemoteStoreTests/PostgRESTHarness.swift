import Foundation
import RemoteStore
import SyncModel
import SyncTestSupport

/// A ``RemoteHarness`` on the PostgREST client against the stack.
final class PostgRESTHarness: RemoteHarness {
    let stack: StackEnvironment
    let base: URL

    init(deployedVariant: Bool) throws {
        stack = try StackEnvironment.require()
        base = deployedVariant ? stack.deployedURL : stack.url
    }

    func store(for user: UUID, credential: DeviceCredential?) async throws -> any CompleteRemote {
        let stack = self.stack
        var configuration = PostgRESTConfiguration(projectURL: base, apiKey: stack.anonKey, userID: user) { _ in
            stack.token(for: user)
        }
        configuration.baseBackoff = .milliseconds(10)
        configuration.deviceCredential = credential
        return PostgRESTRemoteStore(configuration: configuration)
    }

    func setTrust(user: UUID, device: UUID, isTrusted: Bool) async throws {
        try await stack.setDevice(device, base: base, fields: #"{"is_trusted":\#(isTrusted)}"#)
    }
}
