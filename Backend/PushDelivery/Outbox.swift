import Foundation
import Logging
import PostgresNIO

/// How a claimed row ends this attempt.
public enum Completion: Sendable, Equatable {
    /// 200: `delivered_at`.
    case delivered
    /// Closed for good without delivery: `failed_at`, with APNs' status and reason when it
    /// answered, and why in `last_error` (`attempts`, `expired`, `our fault`, `token invalid`,
    /// `outcome refused`).
    case dead(status: Int?, reason: String?, note: String)
    /// Charged an attempt; due again after `delay`.
    case retry(status: Int?, reason: String?, delay: Duration)
    /// Not charged: the attempt is given back and the row is due again after `delay`.
    case release(delay: Duration)
}

/// The outbox on PostgreSQL: claims, completions fenced by `leased_by`, token effects and
/// housekeeping. Every statement is short; a request is never sent inside a transaction.
public struct Outbox: Sendable {
    public let client: PostgresClient
    public let workerID: String
    public let logger: Logger

    public init(client: PostgresClient, workerID: String, logger: Logger) {
        self.client = client
        self.workerID = workerID
        self.logger = logger
    }

    /// What a claim found: the rows to send, and the rows it closed without a request.
    public struct Claim: Sendable {
        public var rows: [OutboxRow] = []
        /// (row id, why): a missing, invalid, moved or mistyped token, an environment this
        /// worker does not serve, or past `expires_at`.
        /// Rows closed at claim, never sent, with an alert's kind (its payload's `type`, or
        /// `other`; `nil` for a row that is not an alert).
        public var closed: [(id: Int64, reason: ClosedReason, kind: String?)] = []
    }

    /// Claims up to `limit` due rows in priority order (one transaction: `FOR UPDATE SKIP
    /// LOCKED`, lease and `attempts + 1`), re-reading each row's token. With `only`, claims
    /// that row if it is pending and not leased, due or not (`send-once`). Never a row of
    /// `excluding`: those the worker still sends or has not recorded, whatever their lease says.
    public func claim(
        limit: Int, lease: Duration, environments: [String], only: Int64? = nil, excluding: [Int64] = []
    ) async throws -> Claim {
        let leaseSeconds = lease.seconds
        let onlyID = only ?? 0
        let query: PostgresQuery = """
            WITH due AS (
                SELECT o.id, t.environment,
                    CASE
                        WHEN o.expires_at IS NOT NULL AND o.expires_at <= now() THEN \(ClosedReason.expired.rawValue)
                        WHEN t.token IS NULL THEN \(ClosedReason.tokenUnknown.rawValue)
                        WHEN NOT t.is_valid THEN \(ClosedReason.tokenInvalid.rawValue)
                        WHEN t.user_id <> o.user_id OR (o.device_id IS NOT NULL AND t.device_id <> o.device_id)
                            THEN \(ClosedReason.tokenMoved.rawValue)
                        WHEN (o.push_type = 'liveactivity') <> (t.token_type = 'live_activity')
                            THEN \(ClosedReason.tokenType.rawValue)
                        WHEN NOT (t.environment = ANY(\(environments)::text[]))
                            THEN \(ClosedReason.environmentNotServed.rawValue)
                    END AS closed_reason
                FROM public.push_outbox o LEFT JOIN public.push_tokens t ON t.token = o.token
                WHERE o.delivered_at IS NULL AND o.failed_at IS NULL
                  AND (o.lease_until IS NULL OR o.lease_until < now())
                  AND NOT (o.id = ANY(\(excluding)::bigint[]))
                  AND ((\(onlyID)::bigint = 0 AND o.next_attempt_at <= now() AND o.not_before <= now())
                       OR o.id = \(onlyID)::bigint)
                ORDER BY o.priority DESC, o.claim_key, o.id
                LIMIT \(limit)
                FOR UPDATE OF o SKIP LOCKED
            ), closed AS (
                UPDATE public.push_outbox o SET failed_at = now(), last_error = due.closed_reason,
                    lease_until = NULL, leased_by = NULL
                FROM due WHERE o.id = due.id AND due.closed_reason IS NOT NULL
                RETURNING o.id, due.closed_reason,
                    CASE WHEN o.push_type = 'alert' THEN coalesce(o.payload ->> 'type', 'other') END AS kind
            ), claimed AS (
                UPDATE public.push_outbox o SET lease_until = now() + make_interval(secs => \(leaseSeconds)),
                    leased_by = \(workerID), attempts = o.attempts + 1
                FROM due WHERE o.id = due.id AND due.closed_reason IS NULL
                RETURNING o.id, o.token, o.push_type, o.priority::bigint, o.collapse_id, o.payload::text, o.apns_id,
                    o.expires_at, o.created_at, o.attempts::bigint, due.environment,
                    greatest(o.created_at, o.not_before) AS due_at
            )
            SELECT id, token, push_type, priority, collapse_id, payload, apns_id, expires_at, created_at, attempts,
                   environment, NULL::text, due_at, NULL::text FROM claimed
            UNION ALL
            SELECT id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, closed_reason, NULL, kind FROM closed
            """
        var claim = Claim()
        let rows = try await client.query(query, logger: logger)
        for try await (
            id, token, type, priority, collapse, payload, apnsID, expires, created, attempts, environment, reason, due,
            kind
        )
            in rows.decode(
                (
                    Int64, String?, String?, Int?, String?, String?, UUID?, Date?, Date?, Int?, String?, String?, Date?,
                    String?
                ).self)
        {
            if let reason {
                // Only the claim's own CASE writes it; a text it does not know is a bug here.
                guard let closed = ClosedReason(rawValue: reason) else {
                    logger.error("claim closed a row for a reason it does not know", metadata: ["row": "\(id)"])
                    continue
                }
                claim.closed.append((id, closed, kind))
                continue
            }
            guard let token, let type = type.flatMap(PushType.init(rawValue:)), let priority, let payload, let apnsID,
                let created, let attempts, let environment
            else { continue }
            claim.rows.append(
                OutboxRow(
                    id: id, token: token, pushType: type, priority: priority, collapseID: collapse, payload: payload,
                    apnsID: apnsID, expiresAt: expires, createdAt: created, attempts: attempts,
                    environment: environment,
                    dueAt: due))
        }
        return claim
    }

    /// Writes outcomes in one statement, each only where its claim still holds the row: this
    /// worker leased it, and no claim came after the one whose attempt the outcome names (a
    /// lease that ended and was taken again, even by this same worker, fences the old answer
    /// off). Returns how many rows it changed.
    @discardableResult
    public func complete(_ outcomes: [(id: Int64, attempt: Int, completion: Completion)]) async throws -> Int {
        guard !outcomes.isEmpty else { return 0 }
        var ids: [Int64] = []
        var attempts: [Int64] = []
        var kinds: [String] = []
        var statuses: [Int64] = []
        var reasons: [String] = []
        var notes: [String] = []
        var refunds: [Int64] = []
        var delays: [Double] = []
        for (id, attempt, completion) in outcomes {
            ids.append(id)
            attempts.append(Int64(attempt))
            switch completion {
            case .delivered:
                kinds.append("delivered")
                statuses.append(200)
                reasons.append("")
                notes.append("")
                refunds.append(0)
                delays.append(0)
            case .dead(let status, let reason, let note):
                kinds.append("dead")
                statuses.append(Int64(status ?? 0))
                reasons.append(reason ?? "")
                notes.append(note)
                refunds.append(0)
                delays.append(0)
            case .retry(let status, let reason, let delay):
                kinds.append("retry")
                statuses.append(Int64(status ?? 0))
                reasons.append(reason ?? "")
                notes.append("")
                refunds.append(0)
                delays.append(delay.seconds)
            case .release(let delay):
                kinds.append("retry")
                statuses.append(0)
                reasons.append("")
                notes.append("")
                refunds.append(1)
                delays.append(delay.seconds)
            }
        }
        let query: PostgresQuery = """
            UPDATE public.push_outbox o SET
                delivered_at = CASE WHEN c.kind = 'delivered' THEN now() ELSE o.delivered_at END,
                failed_at = CASE WHEN c.kind = 'dead' THEN now() ELSE o.failed_at END,
                last_status = coalesce(nullif(c.status, 0)::integer, o.last_status),
                last_reason = coalesce(nullif(c.reason, ''), o.last_reason),
                last_error = coalesce(nullif(c.note, ''), o.last_error),
                attempts = greatest(0, o.attempts - c.refund::integer),
                next_attempt_at = CASE WHEN c.kind = 'retry' THEN now() + make_interval(secs => c.delay)
                                       ELSE o.next_attempt_at END,
                lease_until = NULL, leased_by = NULL
            FROM unnest(\(ids)::bigint[], \(attempts)::bigint[], \(kinds)::text[], \(statuses)::bigint[],
                        \(reasons)::text[], \(notes)::text[], \(refunds)::bigint[], \(delays)::float8[])
                AS c(id, attempt, kind, status, reason, note, refund, delay)
            WHERE o.id = c.id AND o.leased_by = \(workerID) AND o.attempts = c.attempt
            RETURNING o.id
            """
        let rows = try await client.query(query, logger: logger)
        var changed = 0
        for try await _ in rows { changed += 1 }
        return changed
    }

    /// APNs says `token` is not valid (410 with `since`, or 400 `BadDeviceToken`). Marks it
    /// invalid unless it was registered again after `since`. Its other queued rows are then
    /// dropped without a request by the claim's token check. Returns whether it was invalidated.
    @discardableResult
    public func invalidate(token: String, since: Date?) async throws -> Bool {
        let sinceSeconds = since?.timeIntervalSince1970 ?? -1
        let invalidated = try await client.query(
            """
            UPDATE public.push_tokens t SET is_valid = false
            WHERE t.token = \(token) AND t.is_valid
              AND (\(sinceSeconds)::float8 < 0 OR t.updated_at <= to_timestamp(\(sinceSeconds)::float8))
            RETURNING t.token
            """, logger: logger)
        var found = false
        for try await _ in invalidated { found = true }
        return found
    }

    /// Holds back every queued row of `token` until `until` (429 `TooManyRequests`).
    public func holdBack(token: String, for delay: Duration) async throws {
        try await client.query(
            """
            UPDATE public.push_outbox o SET next_attempt_at = greatest(o.next_attempt_at, now() + make_interval(secs => \(delay.seconds)))
            WHERE o.token = \(token) AND o.delivered_at IS NULL AND o.failed_at IS NULL
              AND (o.lease_until IS NULL OR o.lease_until < now())
            """, logger: logger)
    }

    /// Gives back every row this worker still leases (a graceful stop): no attempt charged.
    @discardableResult
    public func releaseAll() async throws -> Int {
        let rows = try await client.query(
            """
            UPDATE public.push_outbox o SET lease_until = NULL, leased_by = NULL, attempts = greatest(0, o.attempts - 1)
            WHERE o.leased_by = \(workerID) AND o.delivered_at IS NULL AND o.failed_at IS NULL
            RETURNING o.id
            """, logger: logger)
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }

    /// Deletes delivered and dead rows older than `retention`, at most `limit` at a time. A
    /// live activity's `end` stays while its token exists: it is what stops later updates.
    @discardableResult
    public func deleteClosed(olderThan retention: Duration, limit: Int = 10_000) async throws -> Int {
        let rows = try await client.query(
            """
            DELETE FROM public.push_outbox o WHERE o.id IN (
                SELECT c.id FROM public.push_outbox c
                WHERE (c.delivered_at IS NOT NULL OR c.failed_at IS NOT NULL)
                  AND coalesce(c.delivered_at, c.failed_at) < now() - make_interval(secs => \(retention.seconds))
                  AND NOT (c.push_type = 'liveactivity' AND c.payload -> 'aps' ->> 'event' = 'end'
                           AND EXISTS (SELECT 1 FROM public.push_tokens t WHERE t.token = c.token))
                LIMIT \(limit))
            RETURNING o.id
            """, logger: logger)
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }

    /// Pending rows and the age in seconds of the oldest (for the gauges).
    public func backlog() async throws -> (pending: Int, oldestAge: Double) {
        let rows = try await client.query(
            """
            SELECT count(*)::bigint, coalesce(extract(epoch FROM now() - min(o.created_at)), 0)::float8
            FROM public.push_outbox o WHERE o.delivered_at IS NULL AND o.failed_at IS NULL
            """, logger: logger)
        for try await (count, age) in rows.decode((Int, Double).self) { return (count, age) }
        return (0, 0)
    }

    /// `notification_report(days)`: the JSON text of one object per UTC day, newest first.
    public func report(days: Int) async throws -> String {
        let rows = try await client.query("SELECT public.notification_report(\(days)::integer)::text", logger: logger)
        for try await text in rows.decode(String.self) { return text }
        return "[]"
    }

    /// Valid `live_activity` tokens without an `end` row (for the gauge).
    public func openLiveActivities() async throws -> Int {
        let rows = try await client.query(
            """
            SELECT count(*)::bigint FROM public.push_tokens t
            WHERE t.token_type = 'live_activity' AND t.is_valid
              AND NOT EXISTS (SELECT 1 FROM public.push_outbox o
                              WHERE o.token = t.token AND o.push_type = 'liveactivity'
                                AND o.payload -> 'aps' ->> 'event' = 'end')
            """, logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    /// `expire_approvals()` (approvals.md), where the database has it. Returns nil when it
    /// does not, so the caller stops asking.
    public func expireApprovals() async throws -> Int? {
        do {
            let rows = try await client.query("SELECT public.expire_approvals()::bigint", logger: logger)
            for try await count in rows.decode(Int.self) { return count }
            return 0
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "42883" {
            return nil
        }
    }
}
