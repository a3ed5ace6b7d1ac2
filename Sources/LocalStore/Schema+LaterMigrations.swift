import EnvelopeDigest
import Foundation
import GRDB
import SyncModel

// The migrations Schema registers from v7 on, one function each, oldest first. Never edit one that has
// shipped: add a new one.
extension Schema {
    /// v7: ledger digest kept per session.
    static func v7(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Counting a recipient's entries by key (a push's coverage check) reads this index alone.
                DROP INDEX distribution_ledger_recipient;
                CREATE INDEX distribution_ledger_recipient_key ON distribution_ledger (recipient_device_id, recipient_key_fingerprint);

                -- Desktop: each ledger entry's row_hash (sync.md's envelope digest), split as h1/h2.
                ALTER TABLE distribution_ledger ADD COLUMN row_h1 INTEGER;
                ALTER TABLE distribution_ledger ADD COLUMN row_h2 INTEGER;
                """)
        // Desktop: per session, the count and XOR of its hashed ledger entries, so a push's
        // digest reads one row per session instead of hashing every entry.
        try db.execute(sql: SecretDigest.sqliteKeptDigest(table: "ledger_digests", source: "distribution_ledger"))
        // Entries written before: hash those that recorded their envelope's key.
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT session_id, recipient_device_id, ephemeral_public_key FROM distribution_ledger WHERE ephemeral_public_key IS NOT NULL
                """)
        let update = try db.makeStatement(
            sql:
                "UPDATE distribution_ledger SET row_h1 = ?, row_h2 = ? WHERE session_id = ? AND recipient_device_id = ?"
        )
        for row in rows {
            let session: String = row[0], device: String = row[1]
            let hash = SecretDigest.rowHash(sessionID: session, deviceID: device, ephemeralPublicKey: row[2])
            try update.execute(arguments: [hash.0, hash.1, session, device])
        }
    }

    /// v8: ledger coverage kept, unhashed entries indexed.
    static func v8(_ db: Database) throws {
        // Desktop: how many of this desktop's sessions (those with an own secret) each
        // (recipient, key fingerprint) has a ledger entry for, kept by triggers on both
        // tables, so a push's coverage check reads a few rows instead of joining every
        // entry with the own secrets (0.7 s at 1,000,000 entries). Counting entries counts
        // sessions: the ledger holds one entry per (session, recipient).
        // A session deleted cascades to its own secret and its entries in either order: the
        // entries that go first are counted out by the ledger's trigger (their own secret is
        // still there), those left when the own secret goes by the own secrets' trigger.
        let add = """
            INSERT INTO ledger_coverage (recipient_device_id, recipient_key_fingerprint, sessions)
                SELECT NEW.recipient_device_id, NEW.recipient_key_fingerprint, 1
                WHERE EXISTS (SELECT 1 FROM own_session_secrets WHERE session_id = NEW.session_id)
                ON CONFLICT (recipient_device_id, recipient_key_fingerprint) DO UPDATE SET sessions = sessions + 1;
            """
        let remove = """
            UPDATE ledger_coverage SET sessions = sessions - 1
                WHERE recipient_device_id = OLD.recipient_device_id AND recipient_key_fingerprint = OLD.recipient_key_fingerprint
                AND EXISTS (SELECT 1 FROM own_session_secrets WHERE session_id = OLD.session_id);
            DELETE FROM ledger_coverage
                WHERE recipient_device_id = OLD.recipient_device_id AND recipient_key_fingerprint = OLD.recipient_key_fingerprint AND sessions <= 0;
            """
        // An own secret that comes (or goes) brings its session's entries in (or out).
        let ownAdd = """
            INSERT INTO ledger_coverage (recipient_device_id, recipient_key_fingerprint, sessions)
                SELECT recipient_device_id, recipient_key_fingerprint, 1 FROM distribution_ledger WHERE session_id = NEW.session_id
                ON CONFLICT (recipient_device_id, recipient_key_fingerprint) DO UPDATE SET sessions = sessions + 1;
            """
        let ownRemove = """
            UPDATE ledger_coverage SET sessions = sessions - 1
                WHERE EXISTS (SELECT 1 FROM distribution_ledger l WHERE l.session_id = OLD.session_id
                              AND l.recipient_device_id = ledger_coverage.recipient_device_id
                              AND l.recipient_key_fingerprint = ledger_coverage.recipient_key_fingerprint);
            DELETE FROM ledger_coverage WHERE sessions <= 0;
            """
        try db.execute(
            sql: """
                CREATE TABLE ledger_coverage (
                    recipient_device_id TEXT NOT NULL,
                    recipient_key_fingerprint TEXT NOT NULL,
                    sessions INTEGER NOT NULL,
                    PRIMARY KEY (recipient_device_id, recipient_key_fingerprint)
                ) WITHOUT ROWID;
                INSERT INTO ledger_coverage (recipient_device_id, recipient_key_fingerprint, sessions)
                    SELECT l.recipient_device_id, l.recipient_key_fingerprint, count(*) FROM distribution_ledger l
                    JOIN own_session_secrets o ON o.session_id = l.session_id
                    GROUP BY l.recipient_device_id, l.recipient_key_fingerprint;
                CREATE TRIGGER ledger_coverage_insert AFTER INSERT ON distribution_ledger BEGIN
                    \(add)
                END;
                CREATE TRIGGER ledger_coverage_delete AFTER DELETE ON distribution_ledger BEGIN
                    \(remove)
                END;
                CREATE TRIGGER ledger_coverage_update AFTER UPDATE OF session_id, recipient_device_id, recipient_key_fingerprint ON distribution_ledger
                BEGIN
                    \(remove)
                    \(add)
                END;
                CREATE TRIGGER ledger_coverage_own_insert AFTER INSERT ON own_session_secrets BEGIN
                    \(ownAdd)
                END;
                CREATE TRIGGER ledger_coverage_own_delete AFTER DELETE ON own_session_secrets BEGIN
                    \(ownRemove)
                END;
                CREATE TRIGGER ledger_coverage_own_move AFTER UPDATE OF session_id ON own_session_secrets BEGIN
                    \(ownRemove)
                    \(ownAdd)
                END;

                -- Desktop: the entries written before the ledger kept envelope keys, found without
                -- reading every entry.
                CREATE INDEX distribution_ledger_unhashed ON distribution_ledger (session_id) WHERE row_h1 IS NULL;
                """)
    }

    /// v9: generation high-water marks, history kept, invite expectations.
    static func v9(_ db: Database) throws {
        // Phone: per session, the highest generation ever stored, whether an authenticated
        // envelope was ever stored, and the first authenticated sender. No foreign key: a
        // pull that deletes the session (the remote left it out once) must not reset it, or
        // the server could bring back an older secret (docs/trust.md, the high-water rule).
        // Kept by triggers on received_envelopes, so no writer can forget it; it only rises.
        let raise = """
            INSERT INTO session_generation_marks (session_id, generation, authenticated, sender_device_id, updated_at)
                VALUES (NEW.session_id, NEW.generation, NEW.authenticated,
                        CASE WHEN NEW.authenticated THEN NEW.sender_device_id END, (julianday('now') - 2451910.5) * 86400.0)
                ON CONFLICT (session_id) DO UPDATE SET
                    generation = max(generation, excluded.generation),
                    authenticated = authenticated OR excluded.authenticated,
                    sender_device_id = coalesce(sender_device_id, excluded.sender_device_id),
                    updated_at = excluded.updated_at;
            """
        try db.execute(
            sql: """
                CREATE TABLE session_generation_marks (
                    session_id TEXT PRIMARY KEY NOT NULL,
                    generation INTEGER NOT NULL,
                    authenticated INTEGER NOT NULL,
                    sender_device_id TEXT,
                    updated_at REAL NOT NULL
                ) WITHOUT ROWID;
                INSERT INTO session_generation_marks (session_id, generation, authenticated, sender_device_id, updated_at)
                    SELECT session_id, max(generation), max(authenticated),
                           (SELECT h.sender_device_id FROM (SELECT sender_device_id, generation, authenticated FROM received_envelopes e
                                                           WHERE e.session_id = a.session_id
                                                           UNION ALL SELECT sender_device_id, generation, authenticated FROM received_envelope_history r
                                                           WHERE r.session_id = a.session_id) h
                            WHERE h.authenticated ORDER BY h.generation LIMIT 1),
                           (julianday('now') - 2451910.5) * 86400.0
                    FROM (SELECT session_id, generation, authenticated FROM received_envelopes
                          UNION ALL SELECT session_id, generation, authenticated FROM received_envelope_history) a
                    GROUP BY session_id;
                CREATE TRIGGER received_envelope_mark_insert AFTER INSERT ON received_envelopes BEGIN
                    \(raise)
                END;
                CREATE TRIGGER received_envelope_mark_update AFTER UPDATE ON received_envelopes BEGIN
                    \(raise)
                END;

                -- Phone: the history of generations survives the session's deletion too (it
                -- cascaded before), so older messages stay readable when the session comes back.
                DROP TRIGGER received_envelope_keep_generation;
                CREATE TABLE received_envelope_history_kept (
                    session_id TEXT NOT NULL,
                    generation INTEGER NOT NULL,
                    ephemeral_public_key TEXT NOT NULL,
                    encrypted_secret TEXT NOT NULL,
                    fetched_at REAL NOT NULL,
                    sender_device_id TEXT,
                    sender_public_key TEXT,
                    authenticated INTEGER NOT NULL,
                    PRIMARY KEY (session_id, generation)
                ) WITHOUT ROWID;
                INSERT INTO received_envelope_history_kept SELECT session_id, generation, ephemeral_public_key, encrypted_secret, fetched_at,
                    sender_device_id, sender_public_key, authenticated FROM received_envelope_history;
                DROP TABLE received_envelope_history;
                ALTER TABLE received_envelope_history_kept RENAME TO received_envelope_history;
                CREATE TRIGGER received_envelope_keep_generation BEFORE UPDATE OF generation ON received_envelopes
                WHEN NEW.generation <> OLD.generation BEGIN
                    INSERT OR REPLACE INTO received_envelope_history (session_id, generation, ephemeral_public_key, encrypted_secret, fetched_at,
                                                                       sender_device_id, sender_public_key, authenticated)
                    VALUES (OLD.session_id, OLD.generation, OLD.ephemeral_public_key, OLD.encrypted_secret, OLD.fetched_at,
                            OLD.sender_device_id, OLD.sender_public_key, OLD.authenticated);
                END;
                -- An envelope deleted (its session deleted, or no longer addressed here) stays in
                -- the history under its generation: the pull compares a returning version-1
                -- envelope with it, and older messages stay readable.
                CREATE TRIGGER received_envelope_keep_deleted BEFORE DELETE ON received_envelopes BEGIN
                    INSERT OR REPLACE INTO received_envelope_history (session_id, generation, ephemeral_public_key, encrypted_secret, fetched_at,
                                                                       sender_device_id, sender_public_key, authenticated)
                    VALUES (OLD.session_id, OLD.generation, OLD.ephemeral_public_key, OLD.encrypted_secret, OLD.fetched_at,
                            OLD.sender_device_id, OLD.sender_public_key, OLD.authenticated);
                END;
                """)
        try v9Invites(db)
    }

    /// v9's last part. Trust root: what the person said an invite is for (the type and role certified).
    static func v9Invites(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE pairing_invites ADD COLUMN device_type TEXT;
                ALTER TABLE pairing_invites ADD COLUMN device_role TEXT;
                """)
    }

    /// v10: approval requests sent.
    static func v10(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Desktop: each approval request as this device made it. Only these bytes count when an
                -- answer is checked (never the server's copy of the request).
                CREATE TABLE sent_approvals (
                    request_id TEXT PRIMARY KEY NOT NULL,
                    session_id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    generation INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    created_at REAL NOT NULL
                ) WITHOUT ROWID;
                """)
    }

    /// v11: envelope rows as the remote holds them, with their digest kept.
    static func v11(_ db: Database) throws {
        // Phone: every envelope row the remote addresses to this device, as last read, whatever
        // became of it: what a pull compares with the remote's digest instead of listing every
        // envelope (docs/sync.md, "The pull feed"). row_h1/row_h2: the remote's row hash, MD5
        // of session_id:device_id:ephemeral_public_key, bytes 0-7 and 8-15. The row itself is
        // kept only while it is not the envelope stored for its session (not opened yet,
        // refused, unreadable, its session not here): the pull opens exactly those. Once stored,
        // only the hash stays (the envelope is in received_envelopes).
        func xor(_ a: String, _ b: String) -> String { "((\(a) | \(b)) - (\(a) & \(b)))" }
        try db.execute(
            sql: """
                CREATE TABLE envelope_rows (
                    session_id TEXT PRIMARY KEY NOT NULL,
                    row_h1 INTEGER NOT NULL,
                    row_h2 INTEGER NOT NULL,
                    ephemeral_public_key TEXT,
                    encrypted_secret TEXT
                ) WITHOUT ROWID;
                -- The digest of every row (count and XORs), kept by triggers: one row to read.
                CREATE TABLE envelope_rows_digest (
                    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                    pairs INTEGER NOT NULL,
                    h1 INTEGER NOT NULL,
                    h2 INTEGER NOT NULL
                );
                INSERT INTO envelope_rows_digest (singleton, pairs, h1, h2) VALUES (1, 0, 0, 0);
                CREATE TRIGGER envelope_rows_digest_insert AFTER INSERT ON envelope_rows BEGIN
                    UPDATE envelope_rows_digest SET pairs = pairs + 1, h1 = \(xor("h1", "NEW.row_h1")),
                        h2 = \(xor("h2", "NEW.row_h2"));
                END;
                CREATE TRIGGER envelope_rows_digest_delete AFTER DELETE ON envelope_rows BEGIN
                    UPDATE envelope_rows_digest SET pairs = pairs - 1, h1 = \(xor("h1", "OLD.row_h1")),
                        h2 = \(xor("h2", "OLD.row_h2"));
                END;
                CREATE TRIGGER envelope_rows_digest_update AFTER UPDATE OF row_h1, row_h2 ON envelope_rows BEGIN
                    UPDATE envelope_rows_digest SET h1 = \(xor(xor("h1", "OLD.row_h1"), "NEW.row_h1")),
                        h2 = \(xor(xor("h2", "OLD.row_h2"), "NEW.row_h2"));
                END;
                -- A stored envelope that goes (its session deleted, even to be written again) takes
                -- its row's record with it: the digest then differs, and the next pull reads it again.
                CREATE TRIGGER received_envelope_forget_row AFTER DELETE ON received_envelopes BEGIN
                    DELETE FROM envelope_rows WHERE session_id = OLD.session_id AND encrypted_secret IS NULL;
                END;
                """)
    }

    /// v12: id digests kept for repositories and sessions.
    static func v12(_ db: Database) throws {
        // What a pull compares with the remote's repository_ids and session_ids (docs/sync.md,
        // "The pull feed"): each row carries its id's hash, written with the row, and triggers
        // keep each table's count and XORs in one row of id_digests.
        func xor(_ a: String, _ b: String) -> String { "((\(a) | \(b)) - (\(a) & \(b)))" }
        try db.execute(
            sql: """
                CREATE TABLE id_digests (
                    table_name TEXT PRIMARY KEY NOT NULL,
                    pairs INTEGER NOT NULL,
                    h1 INTEGER NOT NULL,
                    h2 INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        for table in ["repositories", "sessions"] {
            try db.execute(
                sql: "ALTER TABLE \(table) ADD COLUMN id_h1 INTEGER; ALTER TABLE \(table) ADD COLUMN id_h2 INTEGER")
            var digest = RowSetDigest()
            let update = try db.makeStatement(sql: "UPDATE \(table) SET id_h1 = ?, id_h2 = ? WHERE id = ?")
            for text in try String.fetchAll(db, sql: "SELECT id FROM \(table)") {
                guard let id = UUID.parse(text) else { continue }
                let hash = SecretDigest.idHash(id)
                try update.execute(arguments: [hash.0, hash.1, text])
                digest.add(hash)
            }
            try db.execute(
                sql: "INSERT INTO id_digests (table_name, pairs, h1, h2) VALUES (?, ?, ?, ?)",
                arguments: [table, digest.count, digest.h1, digest.h2])
            try db.execute(
                sql: """
                    CREATE TRIGGER \(table)_id_digest_insert AFTER INSERT ON \(table) WHEN NEW.id_h1 IS NOT NULL BEGIN
                        UPDATE id_digests SET pairs = pairs + 1, h1 = \(xor("h1", "NEW.id_h1")), h2 = \(xor("h2", "NEW.id_h2"))
                        WHERE table_name = '\(table)';
                    END;
                    CREATE TRIGGER \(table)_id_digest_delete AFTER DELETE ON \(table) WHEN OLD.id_h1 IS NOT NULL BEGIN
                        UPDATE id_digests SET pairs = pairs - 1, h1 = \(xor("h1", "OLD.id_h1")), h2 = \(xor("h2", "OLD.id_h2"))
                        WHERE table_name = '\(table)';
                    END;
                    CREATE TRIGGER \(table)_id_digest_update AFTER UPDATE OF id, id_h1, id_h2 ON \(table)
                    WHEN OLD.id_h1 IS NOT NEW.id_h1 OR OLD.id_h2 IS NOT NEW.id_h2 BEGIN
                        UPDATE id_digests SET
                            pairs = pairs - (OLD.id_h1 IS NOT NULL) + (NEW.id_h1 IS NOT NULL),
                            h1 = \(xor(xor("h1", "coalesce(OLD.id_h1, 0)"), "coalesce(NEW.id_h1, 0)")),
                            h2 = \(xor(xor("h2", "coalesce(OLD.id_h2, 0)"), "coalesce(NEW.id_h2, 0)"))
                        WHERE table_name = '\(table)';
                    END;
                    """)
        }
    }
}
