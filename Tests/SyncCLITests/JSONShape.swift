import Foundation

/// The JSON table of docs/cli.md ("JSON"), read as the shapes it promises: for each command, the
/// keys of its top-level object (of each element, for an array), and whether the row leaves more
/// keys open (an `…` among them).
struct JSONShape: Equatable {
    var keys: Set<String>
    /// Keys written `key?`: left out when they have no value.
    var optional: Set<String> = []
    /// An `…` beside the keys: more may follow.
    var open: Bool
    /// The row's keys are those of each element of an array (`[{…}]`), not of one object.
    var array = false

    /// The table's rows by command (`"session list"`), a later row replacing an earlier one for
    /// the same command (`status` appears as a report's holder first, then with its own row).
    static func documented(in markdown: String) -> [String: JSONShape] {
        guard let start = markdown.range(of: "| command | JSON |") else { return [:] }
        var shapes: [String: JSONShape] = [:]
        for line in markdown[start.upperBound...].split(separator: "\n").dropFirst() {
            guard line.hasPrefix("| ") else { break }
            let cells = line.dropFirst(2).components(separatedBy: " | ")
            guard cells.count >= 2, let shape = shape(of: cells.dropFirst().joined(separator: " | ")) else { continue }
            for command in topLevelCodeSpans(cells[0]) { shapes[command] = shape }
        }
        return shapes
    }

    /// The backticked words of `text` outside any brackets.
    static func topLevelCodeSpans(_ text: String) -> [String] {
        spans(text).filter { $0.depth == 0 }.map(\.text)
    }

    /// The keys of a JSON cell: its backticked words at the shallowest depth of `{` and `[` any
    /// of them has (words in parentheses are prose); `nil` for a cell that names no key.
    static func shape(of cell: String) -> JSONShape? {
        let found = spans(cell)
        guard let top = found.map(\.depth).min() else { return nil }
        let written = found.filter { $0.depth == top }.map(\.text)
        let optional = Set(written.filter { $0.hasSuffix("?") }.map { String($0.dropLast()) })
        let keys = Set(written.map { $0.hasSuffix("?") ? String($0.dropLast()) : $0 })
        let array = top == 2 && cell.first(where: { "{[".contains($0) }) == "["
        return JSONShape(keys: keys, optional: optional, open: ellipses(cell).contains(top), array: array)
    }

    /// Each code span of `text` outside parentheses, with its depth in `{` and `[`.
    static func spans(_ text: String) -> [(text: String, depth: Int)] {
        var result: [(String, Int)] = []
        var depth = 0
        var parentheses = 0
        var code: String?
        for character in text {
            if var current = code {
                if character == "`" {
                    if parentheses == 0 { result.append((current, depth)) }
                    code = nil
                } else {
                    current.append(character)
                    code = current
                }
                continue
            }
            switch character {
            case "`": code = ""
            case "{", "[": depth += 1
            case "}", "]": depth -= 1
            case "(": parentheses += 1
            case ")": parentheses -= 1
            default: break
            }
        }
        return result
    }

    /// The depths at which `…` stands outside code spans.
    static func ellipses(_ text: String) -> Set<Int> {
        var depths: Set<Int> = []
        var depth = 0
        var inCode = false
        for character in text {
            if character == "`" { inCode.toggle() }
            if inCode { continue }
            switch character {
            case "{", "[": depth += 1
            case "}", "]": depth -= 1
            case "…": depths.insert(depth)
            default: break
            }
        }
        return depths
    }

    /// What in `value` (a command's parsed output) breaks this shape: documented keys it lacks,
    /// and, unless the row is open, keys the row does not name. An array is checked element by
    /// element.
    func violations(of value: Any, allowingEmpty: Bool = false) -> [String] {
        switch value {
        case let elements as [Any]:
            guard array else { return ["an array where the table gives an object"] }
            guard !elements.isEmpty || allowingEmpty else { return ["an empty array: nothing was checked"] }
            return elements.flatMap { JSONShape(keys: keys, optional: optional, open: open).violations(of: $0) }
        case let object as [String: Any]:
            if array { return ["an object where the table gives an array"] }
            let present = Set(object.keys)
            var found = keys.subtracting(optional).subtracting(present).sorted().map { "missing \($0)" }
            if !open { found += present.subtracting(keys).sorted().map { "undocumented \($0)" } }
            return found
        default:
            return ["not an object or array"]
        }
    }
}
