import Foundation
import Logging
import PostgRESTServerCore
import PostgresNIO

/// What PostgREST calls its schema cache: the tables of the exposed schema and their columns.
struct SchemaCache: Sendable {
    typealias Column = SchemaTable.Column
    typealias Table = SchemaTable

    let schema: String
    let tables: [String: Table]

    static func load(client: PostgresClient, schema: String, logger: Logger) async throws -> SchemaCache {
        let rows = try await client.query(
            """
            SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnum
            FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = \(schema) AND c.relkind IN ('r', 'v', 'p') AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY c.relname, a.attnum
            """, logger: logger)
        var columns: [String: [Column]] = [:]
        for try await (table, name, type, _) in rows.decode((String, String, String, Int16).self) {
            columns[table, default: []].append(Column(name: name, type: type))
        }
        let keys = try await client.query(
            """
            SELECT c.relname, a.attname FROM pg_index i
            JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey)
            WHERE n.nspname = \(schema) AND i.indisprimary ORDER BY c.relname, array_position(i.indkey, a.attnum)
            """, logger: logger)
        var primaryKeys: [String: [String]] = [:]
        for try await (table, name) in keys.decode((String, String).self) {
            primaryKeys[table, default: []].append(name)
        }
        var tables: [String: Table] = [:]
        for (name, list) in columns {
            tables[name] = Table(name: name, columns: list, primaryKey: primaryKeys[name] ?? [])
        }
        return SchemaCache(schema: schema, tables: tables)
    }
}
