import Foundation
import HTTPTypes
import RemoteStore

// The tests build requests and answers from plain strings; the transport's own types are
// swift-http-types' (the method, the fields, the status).

extension TransportRequest {
    init(method: String, url: URL, headers: [(String, String)] = [], body: Data? = nil, timeout: TimeInterval = 30) {
        var fields = HTTPFields()
        for (name, value) in headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        self.init(method: HTTPRequest.Method(method)!, url: url, headerFields: fields, body: body, timeout: timeout)
    }
}

extension TransportResponse {
    init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        var fields = HTTPFields()
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            fields.append(HTTPField(name: HTTPField.Name(name)!, value: value))
        }
        self.init(status: HTTPResponse.Status(code: status), headerFields: fields, body: body)
    }

    /// The fields by lowercased name, repeated ones joined with ", ".
    var headers: [String: String] {
        var result: [String: String] = [:]
        for field in headerFields {
            let name = field.name.canonicalName
            result[name] = result[name].map { $0 + ", " + field.value } ?? field.value
        }
        return result
    }
}
