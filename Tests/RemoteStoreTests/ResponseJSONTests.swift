import Foundation
import RemoteStore
import Testing

/// The response reader against `JSONSerialization`, which it replaced for rows: the same values
/// from the same bodies, and a typed refusal of what is not JSON.
@Suite("Response rows read without JSONSerialization")
struct ResponseJSONTests {
    /// A value as `JSONSerialization` gives it, for comparison.
    static func foundation(_ value: ResponseValue) throws -> NSObject {
        switch value {
        case .null: return NSNull()
        case let .bool(flag): return NSNumber(value: flag)
        case let .int(number): return NSNumber(value: number)
        case let .double(number): return NSNumber(value: number)
        case let .string(text): return text as NSString
        case let .json(text): return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSObject)
        }
    }

    static let documents: [String] = [
        #"[]"#,
        #" [ { } ] "#,
        #"[{"id":"1f0e8c9a-2b3c-4d5e-8f90-a1b2c3d4e5f6","n":0,"m":-12,"big":9223372036854775807,"neg":-9223372036854775808}]"#,
        #"[{"f":1.5,"e":1e3,"E":-2.5E-3,"z":-0.0}]"#,
        #"[{"t":true,"f":false,"n":null}]"#,
        #"[{"s":"plain","esc":"a\"b\\c\/d\b\f\n\r\t","u":"\u00e9\u4e2d\ud83d\ude00","raw":"é中😀","ctl":"\u0000\u001f"}]"#,
        #"[{"nested":{"a":[1,2,{"b":null}],"c":"x"},"list":[],"obj":{},"deep":[[[[["x"]]]]]}]"#,
        #"[{"a":1},{"a":2,"b":"two"},{"c":[true,false,null,1.25,"s",{"k":"v"}]}]"#,
        "[\n\t{\r\n \"spaced\" : \"yes\" , \"n\" : 3 }\n]\n",
    ]

    @Test("every row holds what JSONSerialization reads from the same body", arguments: documents)
    func sameAsFoundation(document: String) throws {
        let rows = try ResponseJSON.rows(Data(document.utf8), table: "t")
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(document.utf8)) as? [[String: Any]])
        #expect(rows.count == expected.count)
        for (row, object) in zip(rows, expected) {
            #expect(Set(row.fields.map(\.name)) == Set(object.keys))
            for (name, value) in object {
                let ours = try #require(row[name])
                #expect(try Self.foundation(ours).isEqual(value as AnyObject), "\(name)")
            }
        }
    }

    @Test("numbers keep their kind: integers that fit are Int, others Double")
    func numberKinds() throws {
        let row = try #require(
            try ResponseJSON.rows(Data(#"[{"a":7,"b":7.0,"c":7e0,"d":-0,"e":99999999999999999999}]"#.utf8), table: "t")
                .first)
        #expect(row["a"] == .int(7))
        #expect(row["b"] == .double(7))
        #expect(row["c"] == .double(7))
        #expect(row["d"] == .int(0))
        #expect(row["e"] == .double(1e20))
    }

    @Test("a member written twice reads as its last value, as JSONSerialization reads it")
    func duplicateMembers() throws {
        let row = try #require(try ResponseJSON.rows(Data(#"[{"id":"a","id":"b"}]"#.utf8), table: "t").first)
        #expect(row["id"] == .string("b"))
    }

    @Test("nested values come back as their text, which reads back to the same value")
    func nestedText() throws {
        let body = #"[{"runtime_status":{"schema_version":"1","coding_session":{"status":"running"}},"caps":[1, 2]}]"#
        let row = try #require(try ResponseJSON.rows(Data(body.utf8), table: "t").first)
        #expect(row["runtime_status"] == .json(#"{"schema_version":"1","coding_session":{"status":"running"}}"#))
        #expect(row["caps"] == .json("[1, 2]"))
    }

    /// Bodies that are not JSON, each refused by `JSONSerialization` too, except trailing
    /// commas, which Foundation's reader on Linux lets through and RFC 8259 does not.
    static let malformed: [(String, [UInt8])] = [
        ("empty", []),
        ("unterminated array", Array(#"[{"a":1}"#.utf8)),
        ("unterminated string", Array(#"[{"a":"b}]"#.utf8)),
        ("trailing comma in array", Array(#"[{"a":1},]"#.utf8)),
        ("trailing comma in object", Array(#"[{"a":1,}]"#.utf8)),
        ("nested trailing comma", Array(#"[{"a":[1,]}]"#.utf8)),
        ("missing colon", Array(#"[{"a" 1}]"#.utf8)),
        ("missing value", Array(#"[{"a":}]"#.utf8)),
        ("missing comma", Array(#"[{"a":1 "b":2}]"#.utf8)),
        ("unquoted name", Array(#"[{a:1}]"#.utf8)),
        ("leading zero", Array(#"[{"a":01}]"#.utf8)),
        ("bare minus", Array(#"[{"a":-}]"#.utf8)),
        ("fraction without digits", Array(#"[{"a":1.}]"#.utf8)),
        ("exponent without digits", Array(#"[{"a":1e}]"#.utf8)),
        ("truncated literal", Array(#"[{"a":tru}]"#.utf8)),
        ("single quotes", Array(#"[{'a':1}]"#.utf8)),
        ("bad escape", Array(#"[{"a":"\x"}]"#.utf8)),
        ("short unicode escape", Array(#"[{"a":"\u12"}]"#.utf8)),
        ("raw control character", Array("[{\"a\":\"x\u{01}y\"}]".utf8)),
        ("raw newline in a string", Array("[{\"a\":\"x\ny\"}]".utf8)),
        ("invalid UTF-8", [0x5B, 0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D, 0x5D]),
        ("truncated UTF-8", [0x5B, 0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xE4, 0xB8, 0x22, 0x7D, 0x5D]),
        ("text after the document", Array(#"[{"a":1}] x"#.utf8)),
        ("two documents", Array(#"[{"a":1}][]"#.utf8)),
        ("mismatched brackets", Array(#"[{"a":[1}]}]"#.utf8)),
    ]

    @Test("a body that is not JSON is a malformed response, never a crash", arguments: malformed.map(\.0))
    func refusesMalformed(name: String) throws {
        let body = Data(try #require(Self.malformed.first { $0.0 == name }).1)
        if !name.contains("trailing comma") {
            #expect((try? JSONSerialization.jsonObject(with: body)) == nil, "JSONSerialization refuses it too")
        }
        let error = try #require(throws: RemoteStoreError.self) { try ResponseJSON.rows(body, table: "t") }
        #expect(error.code == .malformedResponse)
        #expect(throws: ResponseJSON.Malformed.self) { try ResponseJSON.object(body) }
    }

    @Test("lone surrogate escapes are refused")
    func loneSurrogates() throws {
        for text in [#"[{"a":"\ud800"}]"#, #"[{"a":"\udc00"}]"#, #"[{"a":"\ud800\u0041"}]"#, #"[{"a":"\ud800x"}]"#] {
            #expect(throws: RemoteStoreError.self, "\(text)") { try ResponseJSON.rows(Data(text.utf8), table: "t") }
        }
    }

    @Test("nesting past the limit is refused without exhausting the stack")
    func deepNesting() throws {
        let depth = 100_000
        let inRow = Data(
            ("[{\"a\":" + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}]").utf8)
        #expect(throws: RemoteStoreError.self) { try ResponseJSON.rows(inRow, table: "t") }
        let bare = Data((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
        #expect(throws: RemoteStoreError.self) { try ResponseJSON.rows(bare, table: "t") }
        #expect(throws: ResponseJSON.Malformed.self) { try ResponseJSON.object(bare) }
        // Within the limit, nesting is read.
        let allowed = 400
        let fine = Data(
            ("[{\"a\":" + String(repeating: "[", count: allowed) + String(repeating: "]", count: allowed) + "}]").utf8)
        #expect(try ResponseJSON.rows(fine, table: "t").count == 1)
    }

    @Test("the wrong shape names what is wrong: not an array, or not rows")
    func wrongShapes() throws {
        for (body, message) in [
            (#"{"a":1}"#, "t: response is not a JSON array"), (#""rows""#, "t: response is not a JSON array"),
            (#"[1]"#, "t: response holds something other than rows"),
            (#"[{"a":1},[]]"#, "t: response holds something other than rows"),
        ] {
            let error = try #require(throws: RemoteStoreError.self) {
                try ResponseJSON.rows(Data(body.utf8), table: "t")
            }
            #expect(error.code == .malformedResponse)
            #expect(error.message == message, "\(body)")
        }
        #expect(try ResponseJSON.object(Data("[]".utf8)) == nil)
    }
}
