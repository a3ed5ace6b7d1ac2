import GRDB

// The embedded remote's schema: one migration per project migration that changes what the
// embedded remote keeps, in the order the project applies them, each in its own file of
// Migrations/ (numbered as they run, as supabase/migrations/ are, and named after what each
// adds). Never edit one that has shipped: add a new one.
extension EmbeddedRemoteStore {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: devices, repositories, sessions, secrets", migrate: migration01)
        migrator.registerMigration("v2: runtime status, coordination", migrate: migration02)
        migrator.registerMigration("v3: device trust", migrate: migration03)
        migrator.registerMigration("v4: secret requests", migrate: migration04)
        migrator.registerMigration("v5: envelope digest kept per session", migrate: migration05)
        migrator.registerMigration("v6: approvals", migrate: migration06)
        migrator.registerMigration("v7: notifications", migrate: migration07)
        migrator.registerMigration("v8: identity backups", migrate: migration08)
        migrator.registerMigration("v9: trust log", migrate: migration09)
        migrator.registerMigration("v10: approval control", migrate: migration10)
        migrator.registerMigration("v11: notifications round 2", migrate: migration11)
        migrator.registerMigration("v12: agents' questions", migrate: migration12)
        migrator.registerMigration("v13: answers to questions with choices", migrate: migration13)
        migrator.registerMigration("v14: device credentials", migrate: migration14)
        migrator.registerMigration("v15: a revoked device's pushes", migrate: migration15)
        return migrator
    }
}
