import Foundation

extension JSONValue {
    /// The deepest nesting a parse reads by default.
    public static let defaultMaxDepth = 64

    /// Reads one JSON value (RFC 8259) from UTF-8 bytes: white space around it, nothing after it,
    /// members named once, strings valid UTF-8 with no lone surrogate, at most `maxDepth` levels.
    ///
    /// - Throws: ``JSONSyntaxError`` with the line and column of the first byte it could not read.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONSyntaxError) -> JSONValue {
        var reader = JSONByteReader(bytes: bytes, maxDepth: maxDepth)
        reader.skipSpace()
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.index == bytes.count else { throw reader.error("text after the JSON value") }
        return value
    }

    /// The same reading over `Data`.
    public static func parse(_ data: Data, maxDepth: Int = defaultMaxDepth) throws(JSONSyntaxError) -> JSONValue {
        try parse([UInt8](data), maxDepth: maxDepth)
    }
}

/// The reader behind `JSONValue.parse`.
struct JSONByteReader {
    let bytes: [UInt8]
    let maxDepth: Int
    var index = 0

    func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    /// The error at the current byte, with its line and column.
    func error(_ reason: String) -> JSONSyntaxError {
        var line = 1
        var lineStart = 0
        for position in 0..<min(index, bytes.count) where bytes[position] == 0x0A {
            line += 1
            lineStart = position + 1
        }
        let prefix = bytes[lineStart..<min(index, bytes.count)]
        let column = String(decoding: prefix, as: UTF8.self).unicodeScalars.count + 1
        return JSONSyntaxError(line: line, column: column, reason: reason)
    }

    mutating func skipSpace() {
        while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    mutating func expect(_ byte: UInt8, _ what: String) throws(JSONSyntaxError) {
        guard peek() == byte else { throw error("expected \(what)") }
        index += 1
    }

    mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth < maxDepth else { throw error("nested deeper than \(maxDepth) levels") }
        switch peek() {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case .some(let byte) where byte == UInt8(ascii: "-") || (0x30...0x39).contains(byte): return try number()
        case nil: throw error("the text ends where a value should be")
        default: throw error("expected a value")
        }
    }

    mutating func literal(_ text: String, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        for byte in text.utf8 { try expect(byte, "'\(text)'") }
        return value
    }

    mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        index += 1
        var members: [(String, JSONValue)] = []
        var names = Set<String>()
        skipSpace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipSpace()
            guard peek() == UInt8(ascii: "\"") else { throw error("expected a member name in quotes") }
            let start = index
            let name = try string()
            guard names.insert(name).inserted else {
                index = start
                throw error("a member name appears twice in one object")
            }
            skipSpace()
            try expect(UInt8(ascii: ":"), "':' after a member name")
            skipSpace()
            members.append((name, try value(depth: depth + 1)))
            skipSpace()
            if peek() == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "}"), "',' or '}'")
            return .object(members)
        }
    }

    mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        index += 1
        var items: [JSONValue] = []
        skipSpace()
        if peek() == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipSpace()
            items.append(try value(depth: depth + 1))
            skipSpace()
            if peek() == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "]"), "',' or ']'")
            return .array(items)
        }
    }

    mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = index
        func digits() -> Int {
            let from = index
            while let byte = peek(), (0x30...0x39).contains(byte) { index += 1 }
            return index - from
        }
        if peek() == UInt8(ascii: "-") { index += 1 }
        if peek() == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            throw error("expected a digit")
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw error("expected a digit after '.'") }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw error("expected a digit in the exponent") }
        }
        return .number(String(decoding: bytes[start..<index], as: UTF8.self))
    }

    mutating func string() throws(JSONSyntaxError) -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var run = index
        func flush(_ end: Int) throws(JSONSyntaxError) {
            guard end > run else { return }
            guard let text = String(validating: bytes[run..<end], as: UTF8.self) else {
                throw error("a string is not valid UTF-8")
            }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while let byte = peek() {
            switch byte {
            case UInt8(ascii: "\""):
                try flush(index)
                index += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                try flush(index)
                index += 1
                scalars.append(try escape())
                run = index
            case 0..<0x20:
                throw error("a control character inside a string (escape it)")
            default:
                index += 1
            }
        }
        throw error("a string is not closed")
    }

    mutating func escape() throws(JSONSyntaxError) -> Unicode.Scalar {
        guard let escape = peek() else { throw error("the text ends inside an escape") }
        index += 1
        switch escape {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            var value = try hex4()
            if (0xD800..<0xDC00).contains(value) {
                guard peek() == UInt8(ascii: "\\") else { throw error("a lone surrogate") }
                index += 1
                try expect(UInt8(ascii: "u"), "a low surrogate")
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else { throw error("a lone surrogate") }
                value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(value) {
                throw error("a lone surrogate")
            }
            guard let scalar = Unicode.Scalar(value) else { throw error("an invalid \\u escape") }
            return scalar
        default:
            index -= 1
            throw error("an unknown escape")
        }
    }

    mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek(), let digit = Character(Unicode.Scalar(byte)).hexDigitValue else {
                throw error("expected four hexadecimal digits")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
