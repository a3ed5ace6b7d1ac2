import ConformanceVectors
import Foundation
import Testing

/// `remote-rules-v1.json` for the suites that read one of its groups and change its words.
enum RemoteRulesFile {
    static let path = VectorPaths.projectDirectory.appendingPathComponent("remote-rules-v1.json").path

    /// The file and its group of `type`.
    static func group(_ type: String) throws -> (json: [String: Any], group: [String: Any]) {
        let json = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let groups = try #require(json["testGroups"] as? [[String: Any]])
        return (json, try #require(groups.first { $0["type"] as? String == type }))
    }

    /// The tests of the group of `type`.
    static func tests(_ type: String) throws -> [[String: Any]] {
        try #require(try group(type).group["tests"] as? [[String: Any]])
    }

    /// Verifies the file holding only the first test of `type` that `pick` chooses, its `field`
    /// set to `value`: the tcIds that fail, and that test's.
    static func failures(
        _ type: String, changing field: String, to value: Any, where pick: ([String: Any]) -> Bool
    ) throws -> (failed: [Int], tcId: Int) {
        let (json, group) = try group(type)
        var test = try #require(try tests(type).first(where: pick))
        test[field] = value
        var changed = json
        var one = group
        one["tests"] = [test]
        changed["testGroups"] = [one]
        let report = try VectorVerifier.verify(data: JSONSerialization.data(withJSONObject: changed), path: path)
        return (report.failures.map(\.tcId), test["tcId"] as? Int ?? -1)
    }
}
