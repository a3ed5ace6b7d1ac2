internal import CQREncode
import Foundation

/// A QR code (libqrencode, error correction M) drawn with Unicode half blocks, two modules per
/// character row, dark on a light quiet zone of 4 modules, for a terminal.
enum TerminalQRCode {
    /// The QR code could not be made (the text is too long for any version).
    struct EncodingError: Error, Sendable, CustomStringConvertible {
        public var description: String { "the text does not fit in a QR code" }
    }

    /// The modules of `text`'s QR code, row by row (`true` is dark).
    static func modules(_ text: String) throws -> [[Bool]] {
        guard let code = text.withCString({ QRcode_encodeString($0, 0, QR_ECLEVEL_M, QR_MODE_8, 1) }) else {
            throw EncodingError()
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        return (0..<width).map { y in (0..<width).map { x in code.pointee.data[y * width + x] & 1 == 1 } }
    }

    /// `text`'s QR code as lines of text. Light modules are drawn, dark ones left blank, so the
    /// code reads on a dark terminal background (as phone scanners expect: dark modules).
    static func render(_ text: String, quietZone: Int = 4) throws -> String {
        let inner = try modules(text)
        let width = inner.count + 2 * quietZone
        let blank = [Bool](repeating: false, count: width)
        let rows =
            [[Bool]](repeating: blank, count: quietZone)
            + inner.map { [Bool](repeating: false, count: quietZone) + $0 + [Bool](repeating: false, count: quietZone) }
            + [[Bool]](repeating: blank, count: quietZone + 1)
        var lines: [String] = []
        for top in stride(from: 0, to: width, by: 2) {
            let bottom = top + 1 < rows.count ? rows[top + 1] : blank
            lines.append(
                String(
                    (0..<width).map { x -> Character in
                        // A light module is drawn; a character's top and bottom halves are two rows.
                        switch (!rows[top][x], !bottom[x]) {
                        case (true, true): return "█"
                        case (true, false): return "▀"
                        case (false, true): return "▄"
                        case (false, false): return " "
                        }
                    }))
        }
        return lines.joined(separator: "\n")
    }
}
