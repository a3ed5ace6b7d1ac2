import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A listening TCP socket on 127.0.0.1 that never accepts and never answers: a connection to it
/// completes (the kernel's backlog), and then nothing comes, as from a server that hangs.
public final class SilentListener: Sendable {
    /// The port it listens on.
    public let port: Int
    private let socketDescriptor: Int32

    public init() throws {
        let silent = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(silent, $0, length) }
        }
        guard silent >= 0, bound == 0, listen(silent, 16) == 0 else {
            if silent >= 0 { close(silent) }
            throw CocoaError(.fileWriteUnknown)
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(silent, $0, &length) }
        }
        socketDescriptor = silent
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(socketDescriptor) }
}
