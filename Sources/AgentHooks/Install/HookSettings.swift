import Foundation

/// Where an agent's hooks are installed: one settings file of the agent's.
public enum HookScope: String, Sendable, Hashable, CaseIterable, Codable {
    /// The person's own settings, for every project.
    case user
    /// The project's shared settings (a file people commit).
    case project
    /// The project's settings on this machine only.
    case local
}

/// One group of handlers an install adds under an event (`{"matcher": ..., "hooks": [...]}`).
public struct HookGroup: Sendable, Hashable {
    public var event: String
    public var matcher: String?
    public var handlers: [JSONValue]

    /// The group's JSON.
    var json: JSONValue {
        var members: [(String, JSONValue)] = []
        if let matcher { members.append(("matcher", .string(matcher))) }
        members.append(("hooks", .array(handlers)))
        return .object(members)
    }
}

/// Merging hook handlers into an agent's settings (the `hooks` object of Claude Code's
/// `settings.json` and of Codex's `hooks.json` share a shape): ours are recognised by `isOurs`,
/// replaced where they stood, everything else is kept in its order.
public struct HookSettingsMerge: Sendable {
    /// Whether a handler is one of ours (by its `args`, or its command).
    public let isOurs: @Sendable (JSONValue) -> Bool

    /// Creates a merge.
    public init(isOurs: @escaping @Sendable (JSONValue) -> Bool) { self.isOurs = isOurs }

    /// `settings` with `groups` in place of our handlers: under each event, ours go where the
    /// first group holding ours stood (else after the others); other handlers of a group that
    /// also held ours stay in it; an event that held only ours and gets none goes.
    ///
    /// - Throws: ``SettingsFileError`` when `hooks` is not an object, or an event's value not an
    ///   array (the file is someone else's shape: it is left alone).
    public func installing(_ groups: [HookGroup], into settings: JSONValue) throws(SettingsFileError) -> JSONValue {
        guard let hooks = settings["hooks"] else {
            return groups.isEmpty ? settings : settings.setting("hooks", to: .object(fresh(groups)))
        }
        guard let events = hooks.members else { throw SettingsFileError("its \"hooks\" is not a JSON object") }
        var result: [(String, JSONValue)] = []
        for (event, value) in events {
            guard let list = value.array else {
                throw SettingsFileError("its \"hooks\".\"\(event)\" is not a JSON array")
            }
            let ours = groups.filter { $0.event == event }.map(\.json)
            var merged: [JSONValue] = []
            var placed = false
            for group in list {
                guard let handlers = group["hooks"]?.array, handlers.contains(where: isOurs) else {
                    merged.append(group)
                    continue
                }
                if !placed {
                    merged += ours
                    placed = true
                }
                let others = handlers.filter { !isOurs($0) }
                if !others.isEmpty { merged.append(group.setting("hooks", to: .array(others))) }
            }
            if !placed { merged += ours }
            if merged.isEmpty && !list.isEmpty { continue }
            result.append((event, .array(merged)))
        }
        let present = Set(events.map(\.0))
        result += fresh(groups.filter { !present.contains($0.event) })
        return settings.setting("hooks", to: .object(result))
    }

    /// `settings` without our handlers; an event left empty by that goes.
    public func uninstalling(from settings: JSONValue) throws(SettingsFileError) -> JSONValue {
        try installing([], into: settings)
    }

    /// The events that hold at least one of our handlers.
    public func installedEvents(in settings: JSONValue) -> [String] {
        (settings["hooks"]?.members ?? []).filter { _, groups in
            (groups.array ?? []).contains { group in (group["hooks"]?.array ?? []).contains(where: isOurs) }
        }.map(\.0)
    }

    /// The events of `groups` in their first order, each with its groups.
    func fresh(_ groups: [HookGroup]) -> [(String, JSONValue)] {
        var seen = Set<String>()
        return groups.map(\.event).filter { seen.insert($0).inserted }.map { event in
            (event, JSONValue.array(groups.filter { $0.event == event }.map(\.json)))
        }
    }
}
