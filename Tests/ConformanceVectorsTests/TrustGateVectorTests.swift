import ConformanceVectors
import DeviceTrust
import Foundation
import Testing

/// The trust gate's vectors name devices as the SQL compares them, as text: a test whose ids are
/// not canonical lowercase UUIDs is malformed, never answered, so that no file can pass the Swift
/// rule with an answer the SQL would not give.
@Suite("remote-rules-v1.json: the trust gate's ids")
struct TrustGateVectorTests {
    @Test(
        "a TrustedDevice test naming an id in capitals, or a mark's id as '*', fails as malformed",
        arguments: ["device", "mark"])
    func nonCanonicalIDs(field: String) throws {
        let path = VectorPaths.projectDirectory.appendingPathComponent("remote-rules-v1.json").path
        var json = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let groups = try #require(json["testGroups"] as? [[String: Any]])
        var group = try #require(groups.first { $0["type"] as? String == "TrustedDevice" })
        // An untrusted device with marks: changing an id leaves the rule's answer as it was, so only
        // the check of the ids can fail the test.
        var test = try #require(
            (group["tests"] as? [[String: Any]])?.first {
                $0["trusted"] as? Bool == false && ($0["marks"] as? [[String: Any]])?.first?["device"] != nil
            })
        let tcId = try #require(test["tcId"] as? Int)
        if field == "device" {
            test["device"] = try #require(test["device"] as? String).uppercased()
        } else {
            var marks = try #require(test["marks"] as? [[String: Any]])
            marks[0]["device"] = "*"
            test["marks"] = marks
        }
        group["tests"] = [test]
        json["testGroups"] = [group]
        let report = try VectorVerifier.verify(data: JSONSerialization.data(withJSONObject: json), path: path)
        #expect(report.failures.map(\.tcId) == [tcId])
        #expect(report.failures.first?.reason.contains("malformed") == true)
    }

    @Test("an entry of a type no reader knows is one the gate cannot read: it trusts nobody in its epoch")
    func unknownType() throws {
        let path = VectorPaths.projectDirectory.appendingPathComponent("trust-log-v1.json")
        let json = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any])
        let groups = try #require(json["testGroups"] as? [[String: Any]])
        let marks = try #require(
            groups.first { $0["type"] as? String == "TrustLogMarks" }?["tests"] as? [[String: Any]])
        let certify = try #require(marks.first { $0["comment"] as? String == "a certify of a phone" })
        let user = try #require((certify["userId"] as? String).flatMap(UUID.init(uuidString:)))
        var bytes = Array(try #require((certify["entry"] as? String).flatMap { Data(base64Encoded: $0) }))
        #expect(TrustLogMarks.of(Data(bytes).base64EncodedString(), userID: user)?.count == 1)
        // The type byte (0x02, a certify) becomes 0x07: the entry still parses, with one signature.
        #expect(bytes[102] == 2)
        bytes[102] = 7
        #expect(TrustLogMarks.of(Data(bytes).base64EncodedString(), userID: user) == nil)
    }
}
