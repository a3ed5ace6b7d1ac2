import ArgumentParser
import Foundation

/// The flags a hint must keep (issue 69): a message of this CLI's own that names the next
/// command to run on this device (`sync-cli login`) names it with the `--store`, `--remote` and
/// `--insecure-http` this command was given, or the person runs it against another store or
/// remote. Only flags the named command takes are added; a command meant for another device
/// (followed by "there", "on …" or "from …") is left as it is. Applied to the CLI's own hints and
/// errors only, never to text from the remote or an agent (an approval's detail, a question).
enum HintFlags {
    /// The flags of this process's command line, each ready to append (empty when none).
    static let given: [(name: String, text: String)] = flags(CommandLine.arguments)

    static func flags(_ arguments: [String]) -> [(name: String, text: String)] {
        var found: [(String, String)] = []
        for (index, argument) in arguments.enumerated() {
            if argument == "--insecure-http" { found.append((argument, argument)) }
            for name in ["--store", "--remote"] {
                let value: String
                if argument == name, index + 1 < arguments.count {
                    value = arguments[index + 1]
                } else if argument.hasPrefix(name + "=") {
                    value = String(argument.dropFirst(name.count + 1))
                } else {
                    continue
                }
                // A URL with user information, a query or a fragment may hold a secret: never
                // repeated in a message.
                if name == "--remote" && value.contains(where: { "@?#".contains($0) }) { continue }
                found.append((name, "\(name) \(quoted(value))"))
            }
        }
        return found
    }

    /// A value as a shell reads it back: as it is when every character is plainly safe, else in
    /// single quotes.
    static func quoted(_ value: String) -> String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-")
        guard !value.isEmpty, !value.allSatisfy(safe.contains) else { return value.isEmpty ? "''" : value }
        return "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// Whether the command `words` names takes the option `flag` (from its own help).
    static func takes(_ flag: String, _ words: [Substring]) -> Bool {
        var command: any ParsableCommand.Type = SyncCLI.self
        for word in words {
            guard let next = command.configuration.subcommands.first(where: { $0._commandName == word }) else {
                return false
            }
            command = next
        }
        guard command.configuration.subcommands.isEmpty else { return false }
        let help = command.helpMessage(columns: 10_000)
        return help.contains(flag + " ") || help.contains(flag + "\n")
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
            let elsewhere = after.prefixMatch(of: /\s+(there|on|from)\b/) != nil
            let words = command.split(separator: " ")
            var extra = ""
            if !elsewhere {
                for flag in flags where !command.contains(flag.name) && takes(flag.name, words) {
                    extra += " " + flag.text
                }
            }
            result += "`sync-cli \(command)\(extra)`"
            rest = after
        }
        return result + rest
    }
}
