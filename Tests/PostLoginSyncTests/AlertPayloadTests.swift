import Foundation
import RemoteStore
import SyncModel
import Testing

/// The pure parts of notifications round 2 an app links: deep links both ways, the strict
/// payload parse, and the one-line delivery summary (notifications-2.md).
@Suite("Alerts: routes, payloads and delivery summaries")
struct AlertPayloadTests {
    let session = UUID()
    let request = UUID()

    @Test("each route is its deep link and back, under any valid scheme")
    func routes() throws {
        for route in [
            AlertRoute.session(session), .approval(session: session, request: request),
            .question(session: session, question: request), .notificationSettings,
        ] {
            for scheme in ["codingbridge", "myapp", "a.b-c+d"] {
                let url = route.url(scheme: scheme)
                #expect(AlertRoute(url: url, scheme: scheme) == route, "\(url)")
                #expect(AlertRoute(url: url, scheme: "other") == nil)
            }
        }
        #expect(
            AlertRoute.approval(session: session, request: request).url(scheme: "codingbridge").absoluteString
                == "codingbridge://session/\(session.canonical)/approval/\(request.canonical)")
        #expect(AlertRoute.isValidScheme("codingbridge") && AlertRoute.isValidScheme("a1+.-"))
        #expect(!AlertRoute.isValidScheme("1app") && !AlertRoute.isValidScheme("App") && !AlertRoute.isValidScheme(""))
        #expect(!AlertRoute.isValidScheme(String(repeating: "a", count: 33)))
    }

    @Test(
        "a deep link of another form is no route",
        arguments: [
            "codingbridge://session/%@/approval", "codingbridge://session/%@/approval/not-a-uuid",
            "codingbridge://session/%@?x=1", "codingbridge://session/%@#frag", "codingbridge://user@session/%@",
            "codingbridge://session:80/%@", "codingbridge://sessions/%@", "codingbridge://session/%@/",
            "codingbridge://session/%@/files/%@", "codingbridge://settings/other", "codingbridge://session",
            "codingbridge://SESSION-UPPER/%@",
        ])
    func refused(form: String) throws {
        let text = form.replacingOccurrences(of: "%@", with: session.canonical)
        let url = try #require(URL(string: text))
        #expect(AlertRoute(url: url, scheme: "codingbridge") == nil, "\(text)")
        let upper = URL(string: "codingbridge://session/\(session.uuidString)")!
        #expect(AlertRoute(url: upper, scheme: "codingbridge") == nil, "ids in canonical lowercase only")
    }

    func approvalJSON(_ extra: [String: Any] = [:], drop: String? = nil) throws -> Data {
        var object: [String: Any] = [
            "aps": ["alert": ["title": "Approval needed"], "category": "APPROVAL_REQUEST"],
            "type": "approval", "sessionId": session.canonical, "requestId": request.canonical,
            "requesterDeviceId": UUID().canonical, "generation": 3, "expiresAt": 1_795_000_060,
            "sealed": "AQAAAAM=", "deepLink": "codingbridge://x",
        ]
        for (key, value) in extra { object[key] = value }
        if let drop { object[drop] = nil }
        return try JSONSerialization.data(withJSONObject: object)
    }

    @Test("an approval payload parses into its route and fields; a task payload into its session")
    func payloads() throws {
        let approval = try AlertPayload(json: try approvalJSON())
        #expect(approval.kind == .approval && approval.route == .approval(session: session, request: request))
        #expect(approval.generation == 3 && approval.expiresAt == 1_795_000_060 && approval.sealed == "AQAAAAM=")
        let question = try AlertPayload(json: try approvalJSON(["type": "question"]))
        #expect(question.route == .question(session: session, question: request))
        #expect(try AlertPayload(json: try approvalJSON(drop: "sealed")).sealed == nil)
        for kind in [AlertKind.taskComplete, .taskFailed, .taskPaused] {
            let task = try AlertPayload(userInfo: ["type": kind.rawValue, "sessionId": session.canonical, "aps": [:]])
            #expect(task.kind == kind && task.route == .session(session) && task.requestID == nil)
        }
    }

    @Test("anything else is refused")
    func malformed() throws {
        let cases: [Data] = [
            try approvalJSON(["type": "handoff"]), try approvalJSON(drop: "type"), try approvalJSON(drop: "sessionId"),
            try approvalJSON(drop: "requestId"), try approvalJSON(["requestId": "nope"]),
            try approvalJSON(drop: "requesterDeviceId"), try approvalJSON(["generation": 0]),
            try approvalJSON(["generation": true]), try approvalJSON(["generation": 1.5]),
            try approvalJSON(["generation": "3"]), try approvalJSON(["expiresAt": -1]),
            try approvalJSON(drop: "expiresAt"), try approvalJSON(["sealed": 1]), Data("[]".utf8), Data("{".utf8),
        ]
        for data in cases {
            #expect(throws: AlertPayloadError.self, "\(String(decoding: data, as: UTF8.self))") {
                try AlertPayload(json: data)
            }
        }
    }

    @Test("the delivery summary: groups in order, reasons, shared names told apart")
    func summary() {
        let phone = AlertDelivery(deviceID: UUID(), deviceName: "phone", outcome: .delivered)
        let tablet = AlertDelivery(
            deviceID: UUID(), deviceName: "tablet", outcome: .failed, reason: "token invalid",
            apnsReason: "Unregistered")
        let laptop = AlertDelivery(
            deviceID: UUID(), deviceName: "laptop", outcome: .unreachable, reason: "token invalid")
        let deliveries = AlertDeliveries(
            alertID: request, kind: "approval", isFinal: true, devices: [laptop, phone, tablet])
        #expect(
            deliveries.summary
                == "delivered to phone; failed: tablet (token invalid); not reachable: laptop (token invalid)")
        #expect(
            AlertDeliveries(alertID: request, kind: "approval", isFinal: true, devices: []).summary
                == "no device has a push token")
        let twinID = UUID()
        let twins = AlertDeliveries(
            alertID: request, kind: "question", isFinal: false,
            devices: [
                AlertDelivery(deviceID: twinID, deviceName: "iPhone", outcome: .queued),
                AlertDelivery(deviceID: UUID(), deviceName: "iPhone", outcome: .off, reason: "setting off"),
            ])
        #expect(twins.summary.hasPrefix("queued for iPhone [\(twinID.canonical.prefix(8))]; off: iPhone ["))
        #expect(twins.summary.hasSuffix("] (setting off)"))
        #expect(
            twins.reachesSomeone
                && !AlertDeliveries(alertID: request, kind: "approval", isFinal: true, devices: [laptop]).reachesSomeone
        )
    }
}
