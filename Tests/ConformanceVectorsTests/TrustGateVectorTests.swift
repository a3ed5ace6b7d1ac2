import ConformanceVectors
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
}
