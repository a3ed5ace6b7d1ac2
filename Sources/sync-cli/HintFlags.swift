import Foundation

/// The flags a hint must keep (issue 69): a message that names the next command to run on this
/// device (`sync-cli login`) names it with the `--store`, `--remote` and `--insecure-http` this
/// command was given, or the person runs it against another store or remote. A command meant for
/// another device (followed by "there", "on …" or "from …") is left as it is.
enum HintFlags {
    /// The flags of this process's command line, each ready to append (empty when none).
    static let given: [(name: String, text: String)] = flags(CommandLine.arguments)

    static func flags(_ arguments: [String]) -> [(name: String, text: String)] {
        var found: [(String, String)] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            for name in ["--store", "--remote"] {
                if argument == name, index + 1 < arguments.endIndex {
                    found.append((name, "\(name) \(quoted(arguments[index + 1]))"))
                } else if argument.hasPrefix(name + "=") {
                    found.append((name, "\(name) \(quoted(String(argument.dropFirst(name.count + 1))))"))
                }
            }
            if argument == "--insecure-http" { found.append((argument, argument)) }
            index += 1
        }
        return found
    }

    /// A value as a shell reads it back.
    static func quoted(_ value: String) -> String {
        guard value.contains(where: { " '\"$`\\".contains($0) }) else { return value }
        return "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// `text` with `flags` added to every `` `sync-cli …` `` meant for this device.
    static func apply(_ text: String, flags: [(name: String, text: String)] = given) -> String {
        guard !flags.isEmpty, text.contains("`sync-cli ") else { return text }
        var result = ""
        var rest = Substring(text)
        while let match = rest.firstMatch(of: /`sync-cli ([a-z][a-z -]*)`/) {
            result += rest[..<match.range.lowerBound]
            let command = String(match.output.1)
            let after = rest[match.range.upperBound...]
            let elsewhere = after.hasPrefix(" there") || after.hasPrefix(" on ") || after.hasPrefix(" from ")
            let words = command.split(separator: " ")
            let local = !["demo", "--version", "--help"].contains(String(words.first ?? ""))
            var extra = ""
            if local && !elsewhere {
                for flag in flags where !command.contains(flag.name) {
                    // `init` makes a store: no remote is involved yet.
                    if words.first == "init" && flag.name != "--store" { continue }
                    extra += " " + flag.text
                }
            }
            result += "`sync-cli \(command)\(extra)`"
            rest = after
        }
        return result + rest
    }
}
