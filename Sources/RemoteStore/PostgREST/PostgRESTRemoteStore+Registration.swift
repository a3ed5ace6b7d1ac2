import Foundation
import SyncModel

// The device credential's registration (docs/trust.md, "Device credentials"): once per client,
// before its first request, so that a device that existed before credentials registers at its
// next run, and a refusal (revoked, or the slot taken) is said at once, with what to do.
extension PostgRESTRemoteStore {
    /// The registration function's path.
    static let registerDevice = "rpc/register_device"

    /// Registers ``PostgRESTConfiguration/deviceCredential`` unless done: one registration at a
    /// time, shared by concurrent requests; a failed one is tried again by the next request.
    func ensureRegistered() async throws {
        guard let credential = configuration.deviceCredential, !configuration.deviceCredentialRegistered else { return }
        let task = registration.withLock { state in
            if let state { return state }
            let fresh = Task {
                _ = try await self.register(credential)
                await self.configuration.onDeviceCredentialRegistered?()
            }
            state = fresh
            return fresh
        }
        do {
            try await task.value
        } catch {
            registration.withLock { if $0 == task { $0 = nil } }
            throw error
        }
    }

    /// Registers this device's credential now, unless this client did already (once per client;
    /// what every request does first). An app calls it after sign-in to learn at once whether
    /// the remote takes this device (a revoked device, or a slot another credential holds, is
    /// refused with what to do).
    public func registerDevice() async throws { try await ensureRegistered() }

    /// `register_device`: the credential travels in its header; the server keeps its hash.
    /// Answers whether this call registered it (false: it was already, or the deployment
    /// predates credentials).
    @discardableResult
    func register(_ credential: DeviceCredential) async throws -> Bool {
        let body = Data(#"{"device_id":"\#(credential.deviceID.canonical)"}"#.utf8)
        do {
            let response = try await send(.post, Self.registerDevice, query: [], prefer: nil, body: body)
            let answer = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any]
            return answer?["registered"] as? Bool == true
        } catch let error as RemoteStoreError where error.postgrestCode == .functionNotFound {
            // A deployment from before device credentials: it knows devices by the id a request names.
            return false
        } catch let error as RemoteStoreError {
            throw Self.registrationRefusal(error)
        }
    }

    /// What a 42501 means when this device's credential may be what stopped it: the
    /// registration is made again. Its refusal (revoked since, or the slot taken) replaces the
    /// generic one; a credential it registered just now (a remote that lost it, or a client told
    /// it was registered when it was not) means the request is worth one more try (`nil`).
    func explainRefusal(_ original: RemoteStoreError) async -> RemoteStoreError? {
        guard let credential = configuration.deviceCredential else { return original }
        do {
            return try await register(credential) ? nil : original
        } catch let refusal as RemoteStoreError
            where refusal.isDeviceRevoked || refusal.hint == "device-credential-taken"
        {
            return refusal
        } catch {
            return original
        }
    }

    /// A refused registration, in words that say what to do.
    static func registrationRefusal(_ error: RemoteStoreError) -> RemoteStoreError {
        var refusal = error
        switch error.hint {
        case "device-revoked"?:
            refusal.message =
                "this device was revoked: the account takes nothing more from it; pair a new store "
                + "(`sync-cli init` in another directory, then `sync-cli trust join`)"
        case "device-credential-taken"?:
            refusal.message =
                "another credential is registered for this device's id, so the remote cannot tell this device "
                + "from whoever registered it: revoke this device from a trusted one (`sync-cli trust revoke`) "
                + "and pair a new store"
        case "device-limit"?:
            refusal.message =
                "this account registered too many new devices in the last hour: try again later (if you did "
                + "not register them, someone holds your login: change your password)"
        default:
            return error
        }
        return refusal
    }
}
