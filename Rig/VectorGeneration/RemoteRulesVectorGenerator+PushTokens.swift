import RemoteRules

/// The PushTokenRefusal group: which registration ``PushTokenRules`` refuses, and its words.
extension RemoteRulesVectorGenerator {
    struct Registration {
        var token = String(repeating: "a1", count: 32)
        var type: String?
        var platform: String?
        var environment: String?
        var activity: String?
        var session = false
        var previous: String?
    }

    static func pushTokenTest(_ comment: String, _ change: (inout Registration) -> Void) -> OutputTest {
        var r = Registration()
        change(&r)
        let refusal = PushTokenRules.refusal(
            token: r.token, type: r.type, platform: r.platform, environment: r.environment, activityID: r.activity,
            hasSession: r.session, previous: r.previous)
        var test = OutputTest(comment: comment, flags: [refusal.map { "Refused_\($0.rawValue)" } ?? "Accepted"])
        (test.token, test.tokenType, test.platform, test.environment) = (r.token, r.type, r.platform, r.environment)
        (test.activityId, test.hasSession, test.previousToken) = (r.activity, r.session, r.previous)
        test.refused = refusal?.rawValue ?? "none"
        test.message = refusal?.message
        return test
    }

    /// Each argument at and past its edges, alone and with an earlier one wrong (the first wins):
    /// lengths in Unicode scalars (a combining mark counts), control characters of both C0 and
    /// C1 and characters that only look like them.
    static func pushTokenTests() -> [OutputTest] {
        func live(_ r: inout Registration, _ activity: String) {
            (r.type, r.activity, r.session) = ("live_activity", activity, true)
        }
        var tests = [pushTokenTest("a device token, defaults") { _ in }]
        for (token, what) in [
            ("", "empty"), (String(repeating: "f", count: 512), "512 characters"),
            (String(repeating: "f", count: 513), "513 characters"), ("ab cd", "a space"),
            ("abc\n", "a newline at the end"),
            ("A-Z.a_z:0-9", "every kind of character allowed"), ("caf\u{e9}", "a letter with an accent"),
            ("\u{ff41}\u{ff42}", "full-width letters"), ("\u{663}\u{664}", "Arabic-Indic digits"), ("ab/cd", "a slash"),
        ] {
            tests.append(pushTokenTest("token: \(what)") { $0.token = token })
        }
        for type in ["device", "live_activity", "Device", "liveactivity", ""] {
            tests.append(
                pushTokenTest("token type \"\(type)\"") { r in
                    r.type = type
                    if type == "live_activity" { (r.activity, r.session) = ("activity-1", true) }
                })
        }
        for environment in ["development", "production", "Production", "sandbox", ""] {
            tests.append(pushTokenTest("environment \"\(environment)\"") { $0.environment = environment })
        }
        for platform in [
            "ios", "android", "", String(repeating: "x", count: 20), String(repeating: "x", count: 21), "iOS",
            "ios1", "\u{e9}t\u{e9}",
        ] {
            tests.append(pushTokenTest("platform \"\(platform)\"") { $0.platform = platform })
        }
        tests += [
            pushTokenTest("a live-activity token without an activity id") {
                ($0.type, $0.session) = ("live_activity", true)
            },
            pushTokenTest("a live-activity token without a session") {
                ($0.type, $0.activity) = ("live_activity", "a")
            },
            pushTokenTest("a device token with an activity id") { $0.activity = "a" },
            pushTokenTest("a device token with a session") { $0.session = true },
            pushTokenTest("a bad token and a bad type: the token is named") { ($0.token, $0.type) = ("", "x") },
            pushTokenTest("a bad type and a bad environment: the type is named") {
                ($0.type, $0.environment) = ("x", "x")
            },
            pushTokenTest("a bad environment and a bad platform: the environment is named") {
                ($0.environment, $0.platform) = ("x", "X")
            },
            pushTokenTest("a bad platform and missing fields: the platform is named") {
                ($0.platform, $0.type) = ("X", "live_activity")
            },
            pushTokenTest("a bad activity id and a bad previous token: the activity is named") {
                live(&$0, "")
                $0.previous = "a b"
            },
        ]
        for (activity, what) in [
            ("", "empty"), (String(repeating: "x", count: 200), "200 characters"),
            (String(repeating: "x", count: 201), "201 characters"),
            (String(repeating: "e\u{301}", count: 100), "200 scalars, 100 with a combining mark"),
            (String(repeating: "e\u{301}", count: 101), "202 scalars that show as 101 characters"),
            ("a\u{1}b", "U+0001"), ("a\tb", "a tab"), ("a\u{1f}", "U+001F"), ("a\u{7f}", "DEL"),
            ("a\u{85}", "NEL (U+0085)"),
            ("a\u{9f}", "U+009F"), ("a\u{a0}b", "a no-break space"), ("a\u{2028}b", "a line separator"),
            ("a\u{200b}b", "a zero-width space"),
            ("\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}", "a family emoji (5 scalars)"),
        ] {
            tests.append(pushTokenTest("a live-activity token whose activity id is \(what)") { live(&$0, activity) })
        }
        for (previous, what) in [
            (String(repeating: "b", count: 512), "512 characters"),
            (String(repeating: "b", count: 513), "513 characters"),
            ("", "empty"), ("a b", "a space"), (String(repeating: "a1", count: 32), "the token itself"),
        ] {
            tests.append(pushTokenTest("previous token: \(what)") { $0.previous = previous })
        }
        return tests
    }
}

/// The DeviceRegistration and NewDeviceRoom groups: what ``CredentialRules`` answers.
extension RemoteRulesVectorGenerator {
    static func words(_ refusal: CredentialRules.Refusal, into test: inout OutputTest) {
        (test.message, test.hint, test.sqlState) = (refusal.message, refusal.hint, refusal.sqlState)
    }

    /// Every combination: a registered row of each kind or none, against each of what else may
    /// hold.
    static func deviceRegistrationTests() -> [OutputTest] {
        let rows: [CredentialRules.Registered?] =
            [nil]
            + [true, false].flatMap { mine in
                [true, false].flatMap { ended in
                    [true, false].map { CredentialRules.Registered(mine: mine, ended: ended, sameCredential: $0) }
                }
            }
        var tests: [OutputTest] = []
        for row in rows {
            for other in [false, true] {
                for revoked in [false, true] {
                    for inUse in [false, true] {
                        let answer = CredentialRules.registration(
                            registered: row, deviceOfAnother: other, revokedInLog: revoked, credentialInUse: inUse)
                        let word: String
                        var test = OutputTest(comment: "", flags: [])
                        switch answer {
                        case .known: word = "known"
                        case .register: word = "register"
                        case .refused(let refusal):
                            word = refusal.rawValue
                            words(refusal, into: &test)
                        }
                        let held = row.map {
                            "a row (\($0.mine ? "mine" : "another user's"), \($0.ended ? "ended" : "live"), "
                                + "\($0.sameCredential ? "this credential" : "another credential"))"
                        }
                        test.comment =
                            "\(held ?? "no row"), device row \(other ? "another user's" : "not another's"), "
                            + "\(revoked ? "revoked in the log" : "not revoked"), credential \(inUse ? "in use" : "unused")"
                        test.flags = [word]
                        test.registered = row != nil
                        (test.mine, test.ended, test.sameCredential) = (row?.mine, row?.ended, row?.sameCredential)
                        (test.deviceOfAnother, test.revokedInLog, test.credentialInUse) = (other, revoked, inUse)
                        test.answer = word
                        tests.append(test)
                    }
                }
            }
        }
        return tests
    }

    static func newDeviceRoomTests() -> [OutputTest] {
        [
            0, 1, CredentialRules.maxNewDevicesPerHour - 1, CredentialRules.maxNewDevicesPerHour,
            CredentialRules.maxNewDevicesPerHour + 1, 1_000,
        ].map { count in
            let room = CredentialRules.roomForNewDevice(registeredInLastHour: count)
            var test = OutputTest(
                comment: "\(count) devices registered in the last hour", flags: [room ? "Room" : "NoRoom"])
            test.registeredInLastHour = count
            test.room = room
            if !room { words(.limit, into: &test) }
            return test
        }
    }

    /// Every holder of a token, its row valid or not.
    static func pushTokenPlacementTests() -> [OutputTest] {
        PushTokenRules.Holder.allCases.flatMap { holder in
            [true, false].map { valid in
                let placement = PushTokenRules.placement(heldBy: holder, valid: valid)
                var test = OutputTest(
                    comment: "token held by \(holder.rawValue.replacingOccurrences(of: "_", with: " ")), "
                        + (valid ? "valid" : "invalid"),
                    flags: [placement == .stays ? "Stays" : "Registered"])
                (test.heldBy, test.holderValid, test.placement) = (holder.rawValue, valid, placement.rawValue)
                return test
            }
        }
    }
}
