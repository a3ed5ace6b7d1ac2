import Foundation
import Logging
import PostgRESTServerCore
import PostgresNIO
import Synchronization

extension Backend {
    /// Runs `statements` in one transaction as `role` with the JWT claims set, as PostgREST does.
    /// Returns the rows of the last statement as text columns.
    ///
    /// Nothing a request does can outlive it on the pooled connection: the transaction starts
    /// with `RESET ALL` (undoing anything a previous user of the connection left at session
    /// level), sets everything else with `SET LOCAL`, runs under a statement timeout, and the
    /// connection is `DISCARD ALL`ed before it goes back to the pool, whatever happened.
    func run(role: String, claims: RequestClaims, _ statements: [(String, [String?])]) async throws -> [[String?]] {
        // A connection that could not be had or could not BEGIN (PostgresNIO closing it after
        // a class-28 error, the server ending it) ran nothing of the request: it is tried again on
        // another, as PostgREST retries its connection errors, rather than answered 503 at once.
        var attempt = 1
        while true {
            do {
                return try await runOnce(role: role, claims: claims, statements)
            } catch let error as UnusableConnection {
                guard attempt < 3 else { throw Self.translate(error.underlying, role: role) }
                logger.warning("no usable connection (attempt \(attempt)): \(error.underlying)")
                attempt += 1
            }
        }
    }

    /// No connection, or one that could not begin a transaction: nothing of the request ran.
    struct UnusableConnection: Error {
        let underlying: Error
    }

    func runOnce(role: String, claims: RequestClaims, _ statements: [(String, [String?])]) async throws -> [[String?]] {
        let logger = self.logger
        let timeout = configuration.statementTimeoutMilliseconds
        let began = Began()
        inFlight.step("waiting for a connection")
        defer { inFlight.step("in the handler") }
        do {
            return try await client.withConnection { connection in
                inFlight.step("in a transaction")
                // A query on a connection PostgresNIO is closing never completes (seen as requests
                // stuck "in a transaction" for good). A connection that has not begun within 5 s,
                // or not finished within the statement timeout and 5 s more, is closed, which fails
                // whatever waits on it: a BEGIN that fails so is tried again on another connection.
                let deadline = Task {
                    try await Task.sleep(for: .seconds(5))
                    if began.value.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(timeout)) }
                    inFlight.step("closing a connection that stopped answering")
                    InFlight.write("closing a connection that stopped answering")
                    try? await connection.close()
                }
                defer { deadline.cancel() }
                do {
                    try await connection.query("BEGIN", logger: logger)
                } catch let error as PSQLError where error.serverInfo == nil {
                    throw UnusableConnection(underlying: error)
                }
                began.value.store(true, ordering: .releasing)
                do {
                    try await connection.query("RESET ALL", logger: logger)
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "SET LOCAL ROLE \(try SQLBuilder.identifier(role))"), logger: logger)
                    var claimBinds = PostgresBindings()
                    claimBinds.append(claims.jwt)
                    claimBinds.append(claims.headersJSON)
                    try await connection.query(
                        PostgresQuery(
                            unsafeSQL:
                                "SELECT set_config('request.jwt.claims', $1, true), set_config('request.headers', $2, true)",
                            binds: claimBinds),
                        logger: logger)
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "SET LOCAL statement_timeout = \(timeout)"), logger: logger)
                    try await connection.query("SET LOCAL TIME ZONE 'UTC'", logger: logger)
                    var result: [[String?]] = []
                    for (sql, values) in statements {
                        var binds = PostgresBindings()
                        for value in values {
                            if let value { binds.append(value) } else { binds.appendNull() }
                        }
                        let rows = try await connection.query(
                            PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
                        result = []
                        for try await row in rows {
                            var columns: [String?] = []
                            for cell in row {
                                columns.append(try cell.decode(String?.self))
                            }
                            result.append(columns)
                        }
                    }
                    inFlight.step("committing")
                    try await connection.query("COMMIT", logger: logger)
                    inFlight.step("discarding the session's state")
                    _ = try? await connection.query("DISCARD ALL", logger: logger)
                    return result
                } catch {
                    // PostgresNIO closes a connection on any SQLSTATE of class 28 (it takes them
                    // for authentication failures), also one a function raised: nothing more may
                    // be sent on it (a query on the closing connection never completes).
                    if let sqlState = (error as? PSQLError)?.serverInfo?[.sqlState], sqlState.hasPrefix("28") {
                        // It goes back to the pool only once closed, so that no other request is
                        // handed it in between.
                        try? await connection.closeFuture.get()
                        throw error
                    }
                    inFlight.step("rolling back")
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    _ = try? await connection.query("DISCARD ALL", logger: logger)
                    throw error
                }
            }
        } catch let error as UnusableConnection {
            throw error
        } catch let error as PSQLError where error.serverInfo == nil && !began.value.load(ordering: .acquiring) {
            throw UnusableConnection(underlying: error)
        } catch {
            throw Self.translate(error, role: role)
        }
    }
}

/// Whether a request's transaction began (its BEGIN was answered), shared with its deadline.
final class Began: Sendable {
    let value = Atomic<Bool>(false)
}
