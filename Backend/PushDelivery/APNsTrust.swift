import Foundation
import NIOCore
import NIOSSL

/// What the APNs transport trusts, and how it checks the name a server proves.
enum APNsTrust {
    /// The root APNs is served under (Apple moved both environments to it in 2025): "USERTrust
    /// RSA Certification Authority" (Sectigo), as Debian's ca-certificates ships it. Without a
    /// configured CA file, this is the only root the worker trusts.
    static let productionRootPEM = """
        -----BEGIN CERTIFICATE-----
        MIIF3jCCA8agAwIBAgIQAf1tMPyjylGoG7xkDjUDLTANBgkqhkiG9w0BAQwFADCB
        iDELMAkGA1UEBhMCVVMxEzARBgNVBAgTCk5ldyBKZXJzZXkxFDASBgNVBAcTC0pl
        cnNleSBDaXR5MR4wHAYDVQQKExVUaGUgVVNFUlRSVVNUIE5ldHdvcmsxLjAsBgNV
        BAMTJVVTRVJUcnVzdCBSU0EgQ2VydGlmaWNhdGlvbiBBdXRob3JpdHkwHhcNMTAw
        MjAxMDAwMDAwWhcNMzgwMTE4MjM1OTU5WjCBiDELMAkGA1UEBhMCVVMxEzARBgNV
        BAgTCk5ldyBKZXJzZXkxFDASBgNVBAcTC0plcnNleSBDaXR5MR4wHAYDVQQKExVU
        aGUgVVNFUlRSVVNUIE5ldHdvcmsxLjAsBgNVBAMTJVVTRVJUcnVzdCBSU0EgQ2Vy
        dGlmaWNhdGlvbiBBdXRob3JpdHkwggIiMA0GCSqGSIb3DQEBAQUAA4ICDwAwggIK
        AoICAQCAEmUXNg7D2wiz0KxXDXbtzSfTTK1Qg2HiqiBNCS1kCdzOiZ/MPans9s/B
        3PHTsdZ7NygRK0faOca8Ohm0X6a9fZ2jY0K2dvKpOyuR+OJv0OwWIJAJPuLodMkY
        tJHUYmTbf6MG8YgYapAiPLz+E/CHFHv25B+O1ORRxhFnRghRy4YUVD+8M/5+bJz/
        Fp0YvVGONaanZshyZ9shZrHUm3gDwFA66Mzw3LyeTP6vBZY1H1dat//O+T23LLb2
        VN3I5xI6Ta5MirdcmrS3ID3KfyI0rn47aGYBROcBTkZTmzNg95S+UzeQc0PzMsNT
        79uq/nROacdrjGCT3sTHDN/hMq7MkztReJVni+49Vv4M0GkPGw/zJSZrM233bkf6
        c0Plfg6lZrEpfDKEY1WJxA3Bk1QwGROs0303p+tdOmw1XNtB1xLaqUkL39iAigmT
        Yo61Zs8liM2EuLE/pDkP2QKe6xJMlXzzawWpXhaDzLhn4ugTncxbgtNMs+1b/97l
        c6wjOy0AvzVVdAlJ2ElYGn+SNuZRkg7zJn0cTRe8yexDJtC/QV9AqURE9JnnV4ee
        UB9XVKg+/XRjL7FQZQnmWEIuQxpMtPAlR1n6BB6T1CZGSlCBst6+eLf8ZxXhyVeE
        Hg9j1uliutZfVS7qXMYoCAQlObgOK6nyTJccBz8NUvXt7y+CDwIDAQABo0IwQDAd
        BgNVHQ4EFgQUU3m/WqorSs9UgOHYm8Cd8rIDZsswDgYDVR0PAQH/BAQDAgEGMA8G
        A1UdEwEB/wQFMAMBAf8wDQYJKoZIhvcNAQEMBQADggIBAFzUfA3P9wF9QZllDHPF
        Up/L+M+ZBn8b2kMVn54CVVeWFPFSPCeHlCjtHzoBN6J2/FNQwISbxmtOuowhT6KO
        VWKR82kV2LyI48SqC/3vqOlLVSoGIG1VeCkZ7l8wXEskEVX/JJpuXior7gtNn3/3
        ATiUFJVDBwn7YKnuHKsSjKCaXqeYalltiz8I+8jRRa8YFWSQEg9zKC7F4iRO/Fjs
        8PRF/iKz6y+O0tlFYQXBl2+odnKPi4w2r78NBc5xjeambx9spnFixdjQg3IM8WcR
        iQycE0xyNN+81XHfqnHd4blsjDwSXWXavVcStkNr/+XeTWYRUc+ZruwXtuhxkYze
        Sf7dNXGiFSeUHM9h4ya7b6NnJSFd5t0dCy5oGzuCr+yDZ4XUmFF0sbmZgIn/f3gZ
        XHlKYC6SQK5MNyosycdiyA5d9zZbyuAlJQG03RoHnHcAP9Dc1ew91Pq7P8yF1m9/
        qS3fuQL39ZeatTXaw2ewh0qpKJ4jjv9cJ2vhsE/zB+4ALtRZh8tSQZXq9EfX7mRB
        VXyNWQKV3WKdwrnuWih0hKWbt5DHDAff9Yk2dDLWKMGwsAvgnEzDHNb842m1R0aB
        L6KCq9NjRHDEjf8tM7qtj3u1cIiuPhnPQCjY/MiQu12ZIvVS5ljFH4gxQ+6IHdfG
        jjxDah2nGN59PRbxYvnKkKj9
        -----END CERTIFICATE-----
        """

    /// The TLS context: HTTP/2 by ALPN, and the roots: the CA file's alone when one is given (tests,
    /// the imitation), otherwise the production root alone.
    static func context(caFile: String?) throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        tls.certificateVerification = .fullVerification
        // Closing waits this long for the server's close_notify, reading whatever it sends
        // meanwhile (5 s by default): a peer flooding connections that the worker closes kept each
        // one, buffers and all, for 5 s (165 MiB at 75 new connections a second). Nothing is
        // waited for at close: every answer has been read by then.
        tls.shutdownTimeout = .milliseconds(100)
        if let caFile {
            tls.trustRoots = .file(caFile)
        } else {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(productionRootPEM.utf8)))
        }
        return try NIOSSLContext(configuration: tls)
    }

    /// Whether `certificate` names `host`. For a host name, only a DNS name of the certificate
    /// counts (NIOSSL's own check would also accept a certificate whose IP address is the one
    /// connected to, which proves nothing about the name); an IP literal needs that IP address.
    static func certificate(_ certificate: NIOSSLCertificate, names host: String) -> Bool {
        let wanted = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]."))
        let isIPLiteral = ipBytes(wanted) != nil
        for name in certificate._subjectAlternativeNames() {
            switch name.nameType {
            case .dnsName where !isIPLiteral:
                let dns = String(decoding: name.contents, as: UTF8.self).lowercased()
                if dns == wanted { return true }
                if dns.hasPrefix("*."), let dot = wanted.firstIndex(of: "."),
                    wanted[wanted.index(after: dot)...] == dns.dropFirst(2), wanted[..<dot].count > 0
                {
                    return true
                }
            case .ipAddress where isIPLiteral:
                if Array(name.contents) == ipBytes(wanted) { return true }
            default:
                continue
            }
        }
        return false
    }

    /// The network-order bytes of an IPv4 or IPv6 literal, or nil.
    static func ipBytes(_ literal: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
