import Foundation
import SyncModel

/// The server's own pass of the lock-screen sanitiser (notifications.md, "Lock-screen sanitiser").
///
/// This engine sanitises status text before it writes it, but any holder of the user's token can
/// write a session's runtime status directly, and the queuing functions copy that text into a
/// live activity when the device shows details. So the worker applies the same function, the one
/// with the published vectors, to every string a lock screen displays before a payload leaves for
/// APNs: the alert's `title`, `subtitle` and `body` (or the alert itself when it is a string), and
/// the content state's `currentOperation` and `todoProgress.currentTask`. The sanitiser is
/// idempotent, so text the engine already sanitised is sent unchanged.
public enum DisplayedText {
    /// The payload with its displayed strings sanitised: the same bytes when nothing changed,
    /// else the object re-encoded (key order is then not kept; APNs does not read it). `nil`
    /// when the payload is not a JSON object (never sent: the check cannot be made).
    public static func sanitised(payload: [UInt8]) -> [UInt8]? {
        guard var root = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any] else {
            return nil
        }
        guard var aps = root["aps"] as? [String: Any] else { return payload }
        var changed = false
        if let alert = aps["alert"] as? String {
            aps["alert"] = clean(alert, &changed)
        } else if var alert = aps["alert"] as? [String: Any] {
            for key in ["title", "subtitle", "body"] {
                if let text = alert[key] as? String { alert[key] = clean(text, &changed) }
            }
            aps["alert"] = alert
        }
        if var state = aps["content-state"] as? [String: Any] {
            if let text = state["currentOperation"] as? String { state["currentOperation"] = clean(text, &changed) }
            if var todo = state["todoProgress"] as? [String: Any], let text = todo["currentTask"] as? String {
                todo["currentTask"] = clean(text, &changed)
                state["todoProgress"] = todo
            }
            aps["content-state"] = state
        }
        guard changed else { return payload }
        root["aps"] = aps
        guard let data = try? JSONSerialization.data(withJSONObject: root, options: [.withoutEscapingSlashes]) else {
            return nil
        }
        return Array(data)
    }

    private static func clean(_ text: String, _ changed: inout Bool) -> String {
        let result = LockScreenText.sanitised(text)
        if result != text { changed = true }
        return result
    }
}
