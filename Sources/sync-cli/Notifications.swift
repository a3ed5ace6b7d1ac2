import ArgumentParser
import Foundation
import RemoteStore
import SyncModel

extension NotificationSettings.Key: ExpressibleByArgument {}

extension SyncCLI {
    struct Notifications: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "notifications", abstract: "This device's notification settings on the remote.",
            discussion: """
                live-activities: live-activity updates (off: none, and open activities end). \
                background: silent pushes (off: none, except approval clearing and handoff). \
                details: show the session's operation and task on the lock screen, sanitised \
                (off: "Working"). time-sensitive: approval alerts break through Focus (off: active). \
                approvals, questions, complete, failed, paused: alerts of that kind (off: none for this \
                device). quiet-while-active: while another device is active on a session (used it in \
                the last 60 s), no task alerts for it and its approvals and questions without sound.
                """,
            subcommands: [Show.self, Set.self]
        )

        static func printSettings(_ settings: NotificationSettings, ended: Int?, json: Bool) throws {
            if json {
                var object: [String: Any] = [:]
                for key in NotificationSettings.Key.allCases { object[JSONStyle.key(key.rawValue)] = settings[key] }
                if let ended { object["liveActivitiesEnded"] = ended }
                let data = try JSONSerialization.data(
                    withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
                return printJSONText(String(decoding: data, as: UTF8.self))
            }
            // The longest name sets the column (a fixed 16 cut `quiet-while-active` short).
            let width = NotificationSettings.Key.allCases.map(\.rawValue.count).max() ?? 0
            for key in NotificationSettings.Key.allCases {
                output(
                    "\(key.rawValue.padding(toLength: width, withPad: " ", startingAt: 0)) \(settings[key] ? "on" : "off")"
                )
            }
            if let ended, ended > 0 { output("Ended \(ended) open live activit\(ended == 1 ? "y" : "ies").") }
        }

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "show", abstract: "Show this device's settings (the defaults until it sets any).")
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Flag(help: "Print the settings as JSON.") var json = false

            func run() async throws {
                let context = try await CoordinationContext(storeOptions, remoteOptions)
                let settings = try await context.run(migration: "notifications") {
                    try await $0.notificationSettings()
                }
                try Notifications.printSettings(settings, ended: nil, json: json)
            }
        }

        struct Set: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "set", abstract: "Turn one setting of this device on or off.")
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Argument(
                help:
                    "live-activities, background, details, time-sensitive, approvals, questions, complete, failed, paused or quiet-while-active."
            ) var key: NotificationSettings.Key
            @Argument(help: "on or off.") var value: String
            @Flag(help: "Print the settings as JSON.") var json = false

            func validate() throws {
                guard value == "on" || value == "off" else { throw ValidationError("the value must be on or off") }
            }

            func run() async throws {
                let context = try await CoordinationContext(storeOptions, remoteOptions)
                let updated = try await context.run(migration: "notifications") {
                    try await $0.setNotificationSettings(NotificationSettings.Change([key: value == "on"]))
                }
                try Notifications.printSettings(updated.settings, ended: updated.liveActivitiesEnded, json: json)
            }
        }
    }
}
