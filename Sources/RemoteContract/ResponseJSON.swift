import Foundation

/// One value of a response row: a scalar as JSON wrote it, or a nested object or array kept as
/// its JSON text (the few columns that hold one, `runtime_status`, `capabilities`, `payload`,
/// read it with `JSONSerialization`, as they read a column holding JSON text).
package enum ResponseValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number written without a fraction or exponent that fits in `Int`.
    case int(Int)
    /// Any other number.
    case double(Double)
    case string(String)
    /// A nested object or array, as its (valid) JSON text.
    case json(String)

    /// The value as `JSONSerialization` would give it, for the columns read as JSON: a string or
    /// JSON text as a `String`, nil for `null`, numbers and booleans as `NSNumber`.
    var foundationValue: Any? {
        switch self {
        case .null: return nil
        case let .bool(flag): return NSNumber(value: flag)
        case let .int(number): return NSNumber(value: number)
        case let .double(number): return NSNumber(value: number)
        case let .string(text), let .json(text): return text
        }
    }
}

/// One object of a response: its members in the order the server wrote them. A name written
/// twice reads as its last value, as `JSONSerialization` reads it.
package struct ResponseRow: Sendable {
    package var fields: [(name: String, value: ResponseValue)]

    package init(fields: [(name: String, value: ResponseValue)] = []) {
        self.fields = fields
    }

    package subscript(name: String) -> ResponseValue? {
        var index = fields.endIndex
        while index > fields.startIndex {
            index -= 1
            if fields[index].name == name { return fields[index].value }
        }
        return nil
    }
}

/// Reads response bodies (RFC 8259 JSON, strictly) straight into ``ResponseRow``s.
///
/// A listing of 100,000 sessions went through `JSONSerialization`, which builds an `NSString`,
/// `NSNumber` and `NSDictionary` for every value and member and then bridges each to Swift. This
/// reader makes one Swift `String` per text value and nothing else. It refuses what
/// `JSONSerialization` refuses: invalid UTF-8, control characters in strings, lone surrogate
/// escapes, leading zeros, trailing text, nesting deeper than ``maxDepth``.
package enum ResponseJSON {
    /// The deepest nesting read (a hostile body cannot exhaust the stack).
    package static let maxDepth = 512

    /// Why a body is not JSON; the offset only, never the text.
    package struct Malformed: Error, Sendable, Equatable {
        package let offset: Int
    }

    /// A body that must be an array of objects (a table's rows), of at most `maxRows` (a page
    /// holding more than was asked for is refused as soon as the row past it begins).
    package static func rows(_ body: Data, table: String, maxRows: Int = .max) throws -> [ResponseRow] {
        do {
            return try body.withUnsafeBytes { raw in
                var reader = Reader(raw.bindMemory(to: UInt8.self))
                return try reader.document { reader in
                    guard reader.peek() == UInt8(ascii: "[") else {
                        throw RemoteStoreError(.malformedResponse, "\(table): response is not a JSON array")
                    }
                    return try reader.rowList(depth: 1, maxRows: maxRows, table: table)
                }
            }
        } catch is Malformed {
            throw RemoteStoreError(.malformedResponse, "\(table): response is not a JSON array")
        }
    }

    /// A body that must be one object whose members named in `lists` are arrays of rows, each of
    /// at most `maxRows`, read straight into rows (not kept as text and read again); the other
    /// members as in ``object(_:)``.
    ///
    /// - Returns: The other members, and each list by name.
    package static func object(
        _ body: Data, lists: Set<String>, maxRows: Int, table: String
    ) throws
        -> (members: ResponseRow, lists: [String: [ResponseRow]])
    {
        do {
            return try body.withUnsafeBytes { raw in
                var reader = Reader(raw.bindMemory(to: UInt8.self))
                return try reader.document { reader in
                    var members = ResponseRow()
                    var found: [String: [ResponseRow]] = [:]
                    try reader.members(depth: 1) { name, reader in
                        if lists.contains(name), reader.peek() == UInt8(ascii: "[") {
                            found[name] = try reader.rowList(depth: 2, maxRows: maxRows, table: "\(table): \(name)")
                        } else {
                            members.fields.append((name, try reader.value(depth: 2)))
                        }
                    }
                    return (members, found)
                }
            }
        } catch is Malformed {
            throw RemoteStoreError(.malformedResponse, "\(table): response is not a JSON object")
        }
    }

    /// A body that must be one object (members that are objects or arrays come as their text).
    package static func object(_ body: Data) throws(Malformed) -> ResponseRow? {
        do {
            return try body.withUnsafeBytes { raw in
                var reader = Reader(raw.bindMemory(to: UInt8.self))
                return try reader.document { reader in
                    guard reader.peek() == UInt8(ascii: "{") else {
                        _ = try reader.value(depth: 1)
                        return nil
                    }
                    return try reader.row(depth: 1)
                }
            }
        } catch let error as Malformed {
            throw error
        } catch {
            throw Malformed(offset: 0)
        }
    }

    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(_ bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        func malformed() -> Malformed { Malformed(offset: index) }

        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func expect(_ byte: UInt8) throws(Malformed) {
            guard index < bytes.count, bytes[index] == byte else { throw malformed() }
            index += 1
        }

        /// A whole document: `body` reads the one value, after which only white space may follow.
        mutating func document<T>(_ body: (inout Reader) throws -> T) throws -> T {
            skipSpace()
            let result = try body(&self)
            skipSpace()
            guard index == bytes.count else { throw malformed() }
            return result
        }

        /// The elements of an array at `index`, each read by `element` (which must consume it).
        mutating func elements(depth: Int, _ element: (inout Reader) throws -> Void) throws {
            guard depth <= ResponseJSON.maxDepth else { throw malformed() }
            try expect(UInt8(ascii: "["))
            skipSpace()
            if peek() == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                skipSpace()
                try element(&self)
                skipSpace()
                guard let byte = peek() else { throw malformed() }
                index += 1
                if byte == UInt8(ascii: "]") { return }
                guard byte == UInt8(ascii: ",") else {
                    index -= 1
                    throw malformed()
                }
            }
        }

        /// An array at `index` of objects, read as rows; more than `maxRows` is refused.
        mutating func rowList(depth: Int, maxRows: Int, table: String) throws -> [ResponseRow] {
            var rows: [ResponseRow] = []
            try elements(depth: depth) { reader in
                guard reader.peek() == UInt8(ascii: "{") else {
                    throw RemoteStoreError(.malformedResponse, "\(table): response holds something other than rows")
                }
                guard rows.count < maxRows else {
                    throw RemoteStoreError(
                        .malformedResponse, "\(table): response holds more than the \(maxRows) rows asked for")
                }
                rows.append(try reader.row(depth: depth + 1))
            }
            return rows
        }

        /// The members of an object at `index`, each value read by `member` (which must consume it).
        mutating func members(depth: Int, _ member: (String, inout Reader) throws -> Void) throws {
            guard depth <= ResponseJSON.maxDepth else { throw malformed() }
            try expect(UInt8(ascii: "{"))
            skipSpace()
            if peek() == UInt8(ascii: "}") {
                index += 1
                return
            }
            while true {
                skipSpace()
                guard peek() == UInt8(ascii: "\"") else { throw malformed() }
                let name = try string()
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                try member(name, &self)
                skipSpace()
                guard let byte = peek() else { throw malformed() }
                index += 1
                if byte == UInt8(ascii: "}") { return }
                guard byte == UInt8(ascii: ",") else {
                    index -= 1
                    throw malformed()
                }
            }
        }

        /// An object at `index` as a row: scalars typed, nested values as their text.
        mutating func row(depth: Int) throws(Malformed) -> ResponseRow {
            var fields: [(name: String, value: ResponseValue)] = []
            do {
                try members(depth: depth) { name, reader in fields.append((name, try reader.value(depth: depth + 1))) }
            } catch let error as Malformed {
                throw error
            } catch {
                throw malformed()
            }
            return ResponseRow(fields: fields)
        }

        /// Any value at `index`; an object or array is checked whole and kept as its text.
        mutating func value(depth: Int) throws(Malformed) -> ResponseValue {
            guard let byte = peek() else { throw malformed() }
            switch byte {
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let start = index
                try skipContainer(depth: depth)
                return .json(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            default: return try number()
            }
        }

        mutating func literal(_ word: StaticString) throws(Malformed) {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { throw malformed() }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw malformed() }
            index += count
        }

        /// Checks an object or array without building it, with an explicit stack of the open
        /// containers (`true` for an object), so that depth costs no recursion.
        mutating func skipContainer(depth: Int) throws(Malformed) {
            var open: [Bool] = []
            // After an opening bracket or a comma a value (or, after an opening, the close) follows.
            var wantValue = true
            var justOpened = false
            repeat {
                skipSpace()
                guard var byte = peek() else { throw malformed() }
                let close = open.last.map { $0 ? UInt8(ascii: "}") : UInt8(ascii: "]") }
                if !wantValue || justOpened, byte == close {
                    index += 1
                    open.removeLast()
                    wantValue = false
                    justOpened = false
                    continue
                }
                guard wantValue else {
                    guard byte == UInt8(ascii: ",") else { throw malformed() }
                    index += 1
                    wantValue = true
                    continue
                }
                justOpened = false
                if open.last == true {
                    // An object's member: its name and colon, then its value like an element's.
                    guard byte == UInt8(ascii: "\"") else { throw malformed() }
                    _ = try string(keep: false)
                    skipSpace()
                    try expect(UInt8(ascii: ":"))
                    skipSpace()
                    guard let next = peek() else { throw malformed() }
                    byte = next
                }
                if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                    guard depth + open.count <= ResponseJSON.maxDepth else { throw malformed() }
                    open.append(byte == UInt8(ascii: "{"))
                    index += 1
                    justOpened = true
                    continue
                }
                _ = try value(depth: depth + open.count)
                wantValue = false
            } while !open.isEmpty
        }

        /// A number, checked against JSON's grammar.
        mutating func number() throws(Malformed) -> ResponseValue {
            let start = index
            var integral = true
            if peek() == UInt8(ascii: "-") { index += 1 }
            guard let first = peek(), first >= 0x30, first <= 0x39 else { throw malformed() }
            index += 1
            if first != 0x30 { skipDigits() }
            if peek() == UInt8(ascii: ".") {
                integral = false
                index += 1
                guard skipDigits() > 0 else { throw malformed() }
            }
            if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
                integral = false
                index += 1
                if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
                guard skipDigits() > 0 else { throw malformed() }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if integral, let number = Int(text) { return .int(number) }
            guard let number = Double(text), number.isFinite else { throw Malformed(offset: start) }
            return .double(number)
        }

        @discardableResult
        mutating func skipDigits() -> Int {
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            return index - start
        }

        /// A string at `index` (its opening quote); with `keep` false it is only checked.
        mutating func string(keep: Bool = true) throws(Malformed) -> String {
            index += 1
            let start = index
            // Most values have no escape: find the closing quote and take the bytes as they are.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    index += 1
                    return try text(slice, keep: keep)
                }
                if byte == UInt8(ascii: "\\") { break }
                guard byte >= 0x20 else { throw malformed() }
                index += 1
            }
            guard index < bytes.count else { throw malformed() }
            var decoded = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return try decoded.withUnsafeBufferPointer { buffer throws(Malformed) in
                        try text(buffer, keep: keep)
                    }
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escape = peek() else { throw malformed() }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                    case UInt8(ascii: "b"): decoded.append(0x08)
                    case UInt8(ascii: "f"): decoded.append(0x0C)
                    case UInt8(ascii: "n"): decoded.append(0x0A)
                    case UInt8(ascii: "r"): decoded.append(0x0D)
                    case UInt8(ascii: "t"): decoded.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar) {
                            // A high surrogate must be followed by an escaped low one.
                            guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"),
                                bytes[index + 1] == UInt8(ascii: "u")
                            else {
                                throw malformed()
                            }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw malformed() }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00..<0xE000).contains(scalar) {
                            throw malformed()
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw malformed() }
                        decoded.append(contentsOf: UTF8.encode(unicode)!)
                    default:
                        throw malformed()
                    }
                default:
                    guard byte >= 0x20 else { throw malformed() }
                    decoded.append(byte)
                    index += 1
                }
            }
            throw malformed()
        }

        mutating func hex4() throws(Malformed) -> UInt32 {
            guard bytes.count - index >= 4 else { throw malformed() }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case 0x30...0x39: digit = byte - 0x30
                case 0x41...0x46: digit = byte - 0x41 + 10
                case 0x61...0x66: digit = byte - 0x61 + 10
                default: throw malformed()
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }

        /// UTF-8 bytes as a `String`, refusing invalid UTF-8 rather than repairing it.
        func text(_ buffer: UnsafeBufferPointer<UInt8>, keep: Bool) throws(Malformed) -> String {
            // ASCII (ids, timestamps, base64) needs no validation beyond the byte range.
            var ascii = true
            for byte in buffer where byte >= 0x80 {
                ascii = false
                break
            }
            if ascii { return keep ? String(decoding: buffer, as: UTF8.self) : "" }
            guard let text = String(validating: buffer, as: UTF8.self) else { throw malformed() }
            return keep ? text : ""
        }
    }
}
