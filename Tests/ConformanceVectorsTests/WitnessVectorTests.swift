import ConformanceVectors
import Foundation
import Testing

/// The witness vectors' second answer: the device's signatures after the call, which say what
/// gave way and whether the new one stayed.
@Suite("remote-rules-v1.json: the witnesses a device keeps")
struct WitnessVectorTests {
    /// The file with one WitnessAdmission test, changed.
    static func verify(
        _ change: (inout [String: Any]) throws -> Void, where pick: @escaping ([String: Any]) -> Bool
    ) throws
        -> (tcId: Int, failures: [Int])
    {
        let path = VectorPaths.projectDirectory.appendingPathComponent("remote-rules-v1.json").path
        var json = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let groups = try #require(json["testGroups"] as? [[String: Any]])
        var group = try #require(groups.first { $0["type"] as? String == "WitnessAdmission" })
        var test = try #require((group["tests"] as? [[String: Any]])?.first(where: pick))
        let tcId = try #require(test["tcId"] as? Int)
        try change(&test)
        group["tests"] = [test]
        json["testGroups"] = [group]
        let report = try VectorVerifier.verify(data: JSONSerialization.data(withJSONObject: json), path: path)
        return (tcId, report.failures.map(\.tcId))
    }

    @Test("a stored witness whose kept list keeps the one that gave way, or lists it out of byte order, fails")
    func keptList() throws {
        let evicting: ([String: Any]) -> Bool = {
            $0["admission"] as? String == "stored" && ($0["held"] as? [Any])?.count ?? 0 >= 4
        }
        let kept = try Self.verify(
            { test in
                let held = try #require(test["held"] as? [[String: Any]]).compactMap { $0["signature"] as? String }
                test["kept"] = held.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            }, where: evicting)
        #expect(kept.failures == [kept.tcId])
        let order = try Self.verify(
            { test in
                test["kept"] = Array(try #require(test["kept"] as? [String]).reversed())
            }, where: evicting)
        #expect(order.failures == [order.tcId])
    }

    @Test("a test whose caller is not a canonical lowercase UUID fails as malformed, never answered")
    func callerInCapitals() throws {
        // Another user in capitals: the rule would still answer `foreign`, so only the check of the
        // ids can fail the test.
        let answer = try Self.verify(
            { test in
                test["caller"] = "AAAAAAAA-1111-4111-8111-111111111111"
            }, where: { $0["admission"] as? String == "foreign" })
        #expect(answer.failures == [answer.tcId])
    }
}
