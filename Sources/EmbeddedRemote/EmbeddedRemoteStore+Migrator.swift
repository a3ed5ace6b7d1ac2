import EnvelopeDigest
import Foundation
import GRDB
import RemoteContract

// The embedded remote's schema: one migration per project migration that changes what the
// embedded remote keeps, in the order the project applies them.
extension EmbeddedRemoteStore {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: devices, repositories, sessions, secrets", migrate: v1)
        migrator.registerMigration("v2: runtime status, coordination", migrate: v2)
        migrator.registerMigration("v3: device trust", migrate: v3)
        migrator.registerMigration("v4: secret requests", migrate: v4)
        migrator.registerMigration("v5: envelope digest kept per session", migrate: v5)
        migrator.registerMigration("v6: approvals", migrate: v6)
        migrator.registerMigration("v7: notifications", migrate: v7)
        migrator.registerMigration("v8: identity backups", migrate: v8)
        migrator.registerMigration("v9: trust log", migrate: Self.trustLogMigration)
        migrator.registerMigration("v10: approval control", migrate: Self.approvalControlMigration)
        migrator.registerMigration("v11: notifications round 2", migrate: Self.notificationsRound2Migration)
        migrator.registerMigration("v12: agents' questions", migrate: Self.questionsMigration)
        migrator.registerMigration("v13: answers to questions with choices", migrate: Self.questionAnswersMigration)
        migrator.registerMigration("v14: device credentials", migrate: Self.credentialsMigration)
        return migrator
    }
}
