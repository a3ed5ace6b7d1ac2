import Foundation
import TestStack
import Testing

/// `sync-cli approval answer-push`, a process of its own as an app's notification action is
/// (notifications-2.md, "What the tests must show", 9).
@Suite("sync-cli approval answer-push")
struct AnswerPushCLITests {
    @Test("a payload without sealed is fetched and answered; a question's payload is refused and answers nothing")
    func answerPush() async throws {
        let cli = try CLI()
        let session = try await ApprovalCLITests.paired(cli)
        let token = String(repeating: "ab", count: 32)
        #expect(try await cli.run(["push-token", "register", "--store", cli.store("p"), token]).status == 0)
        let asked = ApprovalCLITests.ask(
            cli, ["approval", "request", "--store", cli.store("d"), session, "--from-file", "-", "--timeout", "120"],
            stdin: #"{"tool": "Bash", "summary": "npm test"}"#)
        let request = try await UsageMessagesTests.pending(cli, asked)
        let outbox = try await cli.run(["outbox", "list", "--store", cli.store("p"), "--json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(outbox.out.utf8)) as? [[String: Any]])
        var payload = try #require(
            rows.first { ($0["payload"] as? [String: Any])?["requestId"] as? String == request }?["payload"]
                as? [String: Any])
        payload["sealed"] = nil
        let file = cli.directory.appendingPathComponent("payload.json")

        var question = payload
        question["type"] = "question"
        try JSONSerialization.data(withJSONObject: question).write(to: file)
        let refused = try await cli.run(["approval", "answer-push", "--store", cli.store("p"), file.path, "approve"])
        #expect(refused.status == 1 && refused.err.contains("not an approval request"), "\(refused.err)")

        try JSONSerialization.data(withJSONObject: payload).write(to: file)
        let answered = try await cli.run([
            "approval", "answer-push", "--store", cli.store("p"), file.path, "deny", "--json",
        ])
        #expect(answered.status == 0, "\(answered.err)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(answered.out.utf8)) as? [String: Any])
        #expect(object["accepted"] as? Bool == true && object["status"] as? String == "denied")
        #expect(object["elapsedMs"] is Int && object["decidedBy"] is String)
        #expect(try await asked.value.status == 5, "the desktop hears denied")
    }
}
