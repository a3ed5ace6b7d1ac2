extension LockScreenVectorGenerator {
    static let sha = "9fceb02d0ae598e95dc970b74767f19372d61af8" // 40 hex digits
    static let hex32 = "0123456789abcdef0123456789abcdef"
    static let aiza = "AIza" + "SyD3-" + "abcdefghijklmnopqrstuvwxyz" + "_012" // 35 after the prefix
    static let npm = "npm_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5" // 36 after the prefix
    static let glpat = "glpat-" + "xY3-zW5_aB7cD9eF1gH3" // 20 after the prefix
    static let skProj = "sk-proj-" + "Ab3dEf5gHi7jKl9mNo1pQr3sTu5vWx7yZ"
    static let skAnt = "sk-ant-api03-" + "Ab3dEf5gHi7jKl9mNo1pQr3sTu5vWx7yZ-AbCdEf_012345AA"
    static let skLegacy = "sk-" + String(repeating: "aB3dE5gH", count: 6) // 48 after the prefix

    /// Round 5: the reviewer's 43 secrets written as status text, by kind (each is redacted), and
    /// the window. Every expected output is written by hand.
    static var round5Cases: [(String, [String], String, String)] {
        let xs = String(repeating: "x", count: 788)
        return [
            (
                "URL password with a /", ["UserInfo"], "clone https://bob:hunter/2@github.com/x.git",
                "clone https://\(r)@github.com/x.git"
            ),
            ("URL password with a #", ["UserInfo"], "https://bob:hun#ter2@host/x", "https://\(r)@host/x"),
            ("URL password with a ?", ["UserInfo"], "https://bob:hun?ter2@host", "https://\(r)@host"),
            ("URL password with an @: up to the last @", ["UserInfo"], "https://bob:p@ss@host", "https://\(r)@host"),
            (
                "URL password with a / split by a zero-width space", ["UserInfo", "HiddenCharacters"],
                "https://bob:hun\u{200B}/ter@host", "https://\(r)@host"
            ),
            ("passwd=", ["KeywordValue"], "passwd=hunter2", r),
            ("pwd:", ["KeywordValue"], "pwd: hunter2 ok", "\(r) ok"),
            (
                "export PASS= (a weak keyword with =)", ["KeywordValue", "Weak"], "export PASS=hunter2 && run",
                "export \(r) && run"
            ),
            ("DB_PASSWORD= (a component)", ["KeywordValue", "Component"], "DB_PASSWORD=hunter2 ok", "\(r) ok"),
            ("secret_key_base=", ["KeywordValue", "Component"], "secret_key_base=9a8b7c6d5e", r),
            ("camelCase myPassword:", ["KeywordValue", "Component"], "myPassword: hunter2", r),
            (
                "accessToken= with a dotted value", ["KeywordValue", "Component"], "accessToken=abc.def-ghi ok",
                "\(r) ok"
            ),
            ("X-Api-Key:", ["KeywordValue", "Component"], "X-Api-Key: abc123", r),
            ("DBPassword= (an acronym before the keyword)", ["KeywordValue", "Component"], "DBPassword=x", r),
            ("PassWord: (a part in mixed case)", ["KeywordValue", "Component", "CaseFolding"], "PassWord: hunter2", r),
            ("password2= (a digit after the keyword)", ["KeywordValue", "Component"], "password2=hunter2", r),
            ("passphrase:", ["KeywordValue"], "passphrase: correct-horse", r),
            ("credentials=", ["KeywordValue"], "credentials=abc123", r),
            ("ACCESSKEY= (one component)", ["KeywordValue", "Component"], "ACCESSKEY=abc123", r),
            ("access_key_id= (access, then key)", ["KeywordValue", "Component"], "aws_access_key_id=abc123", r),
            ("PRIVATEKEY: (one component)", ["KeywordValue", "Component"], "PRIVATEKEY: abc123", r),
            ("auth=", ["KeywordValue"], "auth=abc123", r),
            ("a value with punctuation runs to white space", ["KeywordValue"], "password=hun;ter,2&x! ok", "\(r) ok"),
            ("quoted value with spaces", ["KeywordValue"], #"password: "correct horse battery" ok"#, "\(r)\" ok"),
            ("unclosed quote: the value runs to the end", ["KeywordValue"], #"password: "correct horse battery"#, r),
            ("PHP assignment", ["KeywordValue"], #"$password = "hunter2";"#, "$\(r)\";"),
            ("Ruby hash =>", ["KeywordValue", "Separator"], #""password" => "hunter2""#, "\"\(r)\""),
            ("Go :=", ["KeywordValue", "Separator"], #"token := "abc""#, "\(r)\""),
            (
                "URL-encoded token%3D", ["KeywordValue", "Separator"], "https://x.io/cb?access_token%3Dabc123 ok",
                "https://x.io/cb?\(r) ok"
            ),
            ("URL-encoded %3a", ["KeywordValue", "Separator"], "token%3aabc", r),
            ("query string token=", ["KeywordValue"], "https://x.io/?token=abc&user=bob ok", "https://x.io/?\(r) ok"),
            ("--password X", ["Option"], "run --password hunter2 --verbose", "run \(r) --verbose"),
            ("--password=X", ["Option", "KeywordValue"], "run --password=hunter2", "run \(r)"),
            ("--token with a quoted value", ["Option"], #"gh --token "a b" ok"#, "gh \(r)\" ok"),
            ("--pass X (a weak keyword as an option)", ["Option", "Weak"], "--pass hunter2", r),
            ("mysql -pX", ["Option", "MySQL"], "mysql -u root -phunter2 mydb", "mysql -u root \(r) mydb"),
            ("mysqldump -pX", ["Option", "MySQL"], "mysqldump -phunter2 db", "mysqldump \(r) db"),
            (
                "curl -u user:X", ["Option", "UserOption"], "curl -u deploy:hunter2 https://x.io",
                "curl \(r) https://x.io"
            ),
            ("curl --user=user:X", ["Option", "UserOption"], "curl --user=deploy:hunter2 x", "curl \(r) x"),
            (
                "Authorization: Basic", ["KeywordValue", "Scheme"], "Authorization: Basic dXNlcjpodW50ZXIy ok",
                "\(r) ok"
            ),
            ("Authorization: Token", ["KeywordValue", "Scheme"], "Authorization: Token abc123 ok", "\(r) ok"),
            (
                "Authorization header in a curl command", ["KeywordValue", "Scheme"],
                #"curl -H "Authorization: Basic dXNlcjpodW50ZXIy" x"#, "curl -H \"\(r) x"
            ),
            ("Cookie: session=", ["KeywordValue"], "Cookie: session=abc123", r),
            ("Cookie: the words after each ;", ["KeywordValue"], "Cookie: theme=dark; session=abc123 ok", "\(r) ok"),
            ("OpenAI project key", ["TokenFormat"], "using \(skProj) ok", "using \(r) ok"),
            ("Anthropic key", ["TokenFormat"], skAnt, r),
            ("OpenAI project key with a 20-character body", ["TokenFormat"], "sk-proj-" + glpat.dropFirst(6), r),
            ("OpenAI key: sk- and 48", ["TokenFormat"], "using \(skLegacy) ok", "using \(r) ok"),
            ("Google API key", ["TokenFormat"], "maps \(aiza) ok", "maps \(r) ok"),
            ("npm token", ["TokenFormat"], "publish with \(npm) ok", "publish with \(r) ok"),
            ("GitLab token", ["TokenFormat"], "push \(glpat) ok", "push \(r) ok"),
            ("Twilio API key", ["TokenFormat"], "SK\(hex32)", r),
            ("bare 32-hex secret", ["Hex"], "key \(hex32) ok", "key \(r) ok"),
            ("ratio as a separator", ["Confusables", "Separator"], "password\u{2236}hunter2", r),
            ("modifier letter colon as a separator", ["Confusables", "Separator"], "token\u{A789}abc", r),
            ("triangular colon as a separator", ["Confusables", "Separator"], "secret\u{2D0} x", r),
            ("short equals sign as a separator", ["Confusables", "Separator"], "api_key\u{A78A}k1", r),
            ("katakana double hyphen after PASS", ["Confusables", "Separator", "Weak"], "PASS\u{30A0}hunter2", r),
            ("Armenian o in password", ["Confusables", "KeywordValue"], "passw\u{585}rd: hunter2", r),
            ("Cherokee S in SECRET", ["Confusables", "KeywordValue"], "\u{13DA}ECRET=x", r),
            ("PGP private key header", ["PrivateKey"], "-----BEGIN PGP PRIVATE KEY BLOCK-----", r),
            ("OpenSSH private key header", ["PrivateKey"], "-----BEGIN OPENSSH PRIVATE KEY----- x", "\(r) x"),
            ("a 40-hex run after no commit word", ["Base64", "CommitID"], "got \(sha) back", "got \(r) back"),
            ("a keyword's value is redacted even as a commit id", ["KeywordValue", "CommitID"], "secret: \(sha)", r),
            (
                "a path mixing upper, lower and digits is redacted", ["Base64", "Path"],
                "Sources/SyncModel/V2/LockScreenTextPatternsTests", r
            ),
            (
                "window: a key id straddling scalar 800 is not shown in part", ["Window"],
                "a token=\(xs) AKIAIOSFODNN7EXAMPLE end", "a \(r) \(r)"
            ),
            (
                "window: 801 scalars without white space", ["Window"], String(repeating: "\u{E9}", count: 801), r
            ),
            (
                "window: 800 scalars are all read", ["Window", "Cut"], String(repeating: "\u{E9}", count: 800),
                String(repeating: "\u{E9}", count: 200)
            ),
            (
                "window: hidden characters count toward the 800", ["Window", "HiddenCharacters"],
                String(repeating: "\u{200B}", count: 795) + "ok fine", "ok \(r)"
            ),
        ]
    }

    /// Round 5's near misses: what is no secret stays.
    static var round5NearMisses: [(String, [String], String, String)] {
        let same: [(String, String)] = [
            ("tokens: is no keyword", "tokens: 1500"),
            ("passed: is no keyword", "passed: 12"),
            ("pass: (a weak keyword takes only =)", "pass: 12 fail: 0"),
            ("max_tokens=", "max_tokens=4096"),
            ("session: is no keyword", "session: resumed"),
            ("author: is no keyword", "author: bob"),
            ("Tokenizer: is no keyword", "Tokenizer: bpe"),
            ("git push -u: a value without a colon", "git push -u origin main"),
            ("mysql -p alone asks for the password", "mysql -u root -p mydb"),
            ("mkdir -p without mysql", "mkdir -pv build"),
            ("risk-assessment: no word start before sk-", "risk-assessment-for-the-new-module-abc"),
            ("sk- with 31 characters", "sk-" + String(repeating: "aB3", count: 10) + "x"),
            ("sk-proj- with 19 characters", "sk-proj-" + glpat.dropFirst(7)),
            ("31 hex digits", "key " + hex32.dropLast() + " ok"),
            ("33 hex digits", "key " + hex32 + "a ok"),
            ("Twilio SK with upper-case hex", "SK" + hex32.uppercased()),
            ("AIza with 34", String(aiza.dropLast())),
            ("npm_ with 35", String(npm.dropLast())),
            ("PGP public key header", "-----BEGIN PGP PUBLIC KEY BLOCK-----"),
            ("commit id after commit", "commit \(sha) done"),
            ("commit id after git reset --hard", "git reset --hard \(sha)"),
            ("commit id after HEAD:", "HEAD: \(sha)"),
            ("32 hex digits after cherry-pick -x", "git cherry-pick -x \(hex32)"),
            ("a long path", "/usr/local/lib/python3/site/packages/foo/bar/baz"),
            ("a long path without digits", "src/components/authentication/LoginFormValidator/index"),
            ("a URL with a port and no user", "https://host:8080/path"),
        ]
        return same.map { ("near miss: " + $0.0, ["NearMiss"], $0.1, $0.1) }
    }
}
