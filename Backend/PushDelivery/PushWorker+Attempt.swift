import Foundation
import Logging

// One row's attempt: the request made and sent, and what APNs' answer means for the row, the
// device token, the provider token and the circuit (push-delivery.md).
extension PushWorker {
    /// One row's attempt, and what to write for it.
    func attempt(_ row: OutboxRow) async -> Completion {
        let now = Date()
        let hold = state.withLock { state -> Date? in
            if case .open = state.circuit { return now }
            return state.tokenHolds[row.token].map(\.until)
        }
        if let hold, hold >= now {
            return .release(delay: .milliseconds(Int64(hold.timeIntervalSince(now) * 1000)))
        }
        var providerToken: ProviderToken
        do { providerToken = try await tokens.token() } catch { return unsigned(error) }
        for _ in 0..<2 {
            let generation = providerToken.generation
            state.withLock { $0.currentGeneration = max($0.currentGeneration, generation) }
            let response: APNsResponse
            switch await send(row, providerToken: providerToken) {
            case .finished(let completion): return completion
            case .answered(let answer): response = answer
            }
            if ![403].contains(response.status) {
                state.withLock { $0.provenGeneration = max($0.provenGeneration, generation) }
            }
            PushMetrics.request(
                environment: row.environment, type: row.pushType, status: response.status, reason: response.reason)
            logger.debug(
                "answer",
                metadata: [
                    "row": "\(row.id)", "token": "\(row.tokenSuffix)", "status": "\(response.status)",
                    "reason": "\(response.reason ?? "")",
                ])
            guard let completion = await act(on: response, for: row) else {
                // The provider token expired: once more with a new one, unless none is to be had.
                let renewed: ProviderToken
                do { renewed = try await tokens.expired(generation: providerToken.generation) } catch {
                    return unsigned(error)
                }
                if renewed.generation == providerToken.generation {
                    return .release(delay: configuration.backoffBase)
                }
                providerToken = renewed
                continue
            }
            return completion
        }
        return .release(delay: configuration.backoffBase)
    }

    /// No provider token could be signed: the row waits for a later try, as for any fault on
    /// this side, and nothing goes out unsigned.
    func unsigned(_ error: ProviderTokenError) -> Completion {
        logger.error("provider token", metadata: ["error": "\(error)"])
        return .release(delay: configuration.backoffBase)
    }

    /// What sending a row came to: an answer, or already what to write.
    enum Sent {
        case answered(APNsResponse)
        case finished(Completion)
    }

    /// Makes the row's request and sends it; a request that cannot be made is dead-lettered,
    /// and one that fails on the way is retried on a new connection.
    func send(_ row: OutboxRow, providerToken: ProviderToken) async -> Sent {
        let request: APNsRequest
        do {
            request = try APNsRequest.make(
                row: row, bundleID: configuration.bundleID, providerToken: providerToken.value)
        } catch {
            let (reason, note) =
                switch error {
                case .payloadTooLarge: ("PayloadTooLarge", "our fault: payload over 4096 bytes")
                case .payloadNotAnObject: ("PayloadNotAnObject", "our fault: payload is not a JSON object")
                }
            logger.error(
                "\(note): dead-lettered, never sent", metadata: ["row": "\(row.id)", "token": "\(row.tokenSuffix)"])
            PushMetrics.closed("dead", reason: reason)
            return .finished(.dead(status: nil, reason: reason, note: note))
        }
        let started = ContinuousClock.now
        let transport = self.transport
        let baseURL = configuration.baseURL(forTokenEnvironment: row.environment)
        let deadline = configuration.requestDeadline
        let send = Task { try await transport.send(request, to: baseURL, deadline: deadline) }
        sends.withLock { $0[row.id] = send }
        defer { _ = sends.withLock { $0.removeValue(forKey: row.id) } }
        do {
            let response = try await withTaskCancellationHandler {
                try await send.value
            } onCancel: {
                send.cancel()
            }
            PushMetrics.requestTime.record(duration: ContinuousClock.now - started)
            return .answered(response)
        } catch {
            if Task.isCancelled || send.isCancelled { return .finished(.release(delay: .zero)) }
            if case APNsTransportError.notProcessed = error, Date().timeIntervalSince(row.createdAt) < 3600 {
                // APNs never processed it (GOAWAY or REFUSED_STREAM): sent again, and not
                // charged (a server going away must not use up attempts). Within the row's first
                // hour only: a server that refuses everything for longer is charged like any
                // other fault, so no row (a live activity's has no expiry) loops for ever.
                PushMetrics.retry(cause: "notProcessed")
                logger.info(
                    "request not processed by APNs; sending again",
                    metadata: ["row": "\(row.id)", "token": "\(row.tokenSuffix)"])
                return .finished(.release(delay: configuration.backoffBase))
            }
            PushMetrics.transportFault(String(describing: type(of: error)))
            logger.warning(
                "request failed; retrying on a new connection",
                metadata: [
                    "row": "\(row.id)", "token": "\(row.tokenSuffix)",
                    "error": "\(Self.describe(error, token: row))",
                ])
            return .finished(retry(row, status: nil, reason: nil, cause: "transport"))
        }
    }

    /// What to write for an answer; `nil` when the provider token expired and the row is to be
    /// sent again with a new one.
    func act(on response: APNsResponse, for row: OutboxRow) async -> Completion? {
        switch AnswerAction(response) {
        case .delivered:
            state.withLock { state in
                state.tokenHolds[row.token] = nil
                if state.circuit == .probing { state.circuit = .closed }
            }
            PushMetrics.queueLag.recordSeconds(Date().timeIntervalSince(row.createdAt))
            return .delivered
        case .invalidateToken(let since):
            return await invalidate(row, response: response, since: since)
        case .deadLetter:
            logger.error(
                "APNs refused the request as malformed: dead-lettered, token left alone",
                metadata: [
                    "row": "\(row.id)", "token": "\(row.tokenSuffix)", "status": "\(response.status)",
                    "reason": "\(response.reason ?? "")",
                ])
            PushMetrics.closed("dead", reason: response.reason ?? String(response.status))
            return .dead(status: response.status, reason: response.reason, note: "our fault")
        case .retryTransient:
            return retry(row, status: response.status, reason: response.reason, cause: "transient")
        case .retryServerError:
            return retry(row, status: response.status, reason: response.reason, cause: "server")
        case .refreshProviderToken:
            return nil
        case .openCircuit:
            return openCircuit(after: response, for: row)
        case .throttleDeviceToken:
            return await throttle(row, response: response)
        case .throttleProviderTokenUpdates:
            await tokens.blockMinting(for: configuration.providerTokenUpdatesBackoff)
            logger.warning("APNs says the provider token changed too often: keeping it, holding back")
            return .release(delay: configuration.providerTokenUpdatesBackoff)
        }
    }

    /// A device token APNs says is no longer valid: marked invalid (from `since`), the row dead.
    func invalidate(_ row: OutboxRow, response: APNsResponse, since: Date?) async -> Completion {
        let reason = response.reason ?? String(response.status)
        do {
            if try await outbox.invalidate(token: row.token, since: since) {
                PushMetrics.invalidated(reason: reason)
                logger.info("device token invalid", metadata: ["token": "\(row.tokenSuffix)", "reason": "\(reason)"])
            }
        } catch {
            logger.error(
                "could not mark the token invalid", metadata: ["token": "\(row.tokenSuffix)", "error": "\(error)"])
        }
        PushMetrics.closed("dead", reason: reason)
        return .dead(status: response.status, reason: response.reason, note: "token invalid")
    }

    /// The provider token was refused: sending stops (the requests on their way are cancelled)
    /// until a probe at the circuit's interval.
    func openCircuit(after response: APNsResponse, for row: OutboxRow) -> Completion {
        let until = Date().addingTimeInterval(configuration.circuitProbeInterval.seconds)
        let opened = state.withLock { state -> Bool in
            let wasOpen = state.circuit != .closed && state.circuit != .probing
            state.circuit = .open(until: until)
            return !wasOpen
        }
        sends.withLock { sends in
            for (id, send) in sends where id != row.id { send.cancel() }
        }
        if opened {
            logger.error(
                "APNs refused the provider token: sending stopped; check APNS_KEY_ID, APNS_TEAM_ID and the key",
                metadata: [
                    "reason": "\(response.reason ?? "")", "probeIn": "\(configuration.circuitProbeInterval)",
                ])
        }
        return .release(delay: .zero)
    }

    /// Too many requests to one device token: that token is held back, longer at each strike.
    func throttle(_ row: OutboxRow, response: APNsResponse) async -> Completion {
        let delay = state.withLock { state -> Duration in
            let strikes = (state.tokenHolds[row.token]?.strikes ?? 0) + 1
            let delay = min(configuration.backoffMax, configuration.tokenBackoffBase * (1 << min(strikes - 1, 20)))
            state.tokenHolds[row.token] = (Date().addingTimeInterval(delay.seconds), strikes)
            return delay
        }
        try? await outbox.holdBack(token: row.token, for: delay)
        PushMetrics.retry(cause: "TooManyRequests")
        if row.attempts >= configuration.maxAttempts {
            return .dead(status: response.status, reason: response.reason, note: "attempts")
        }
        return .retry(status: response.status, reason: response.reason, delay: delay)
    }
}
