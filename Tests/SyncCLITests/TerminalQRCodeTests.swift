import Testing

@testable import sync_cli

@Suite("The pairing code's QR code")
struct TerminalQRCodeTests {
    @Test("the QR code is libqrencode's: a square symbol of a valid size, drawn in half blocks")
    func qr() throws {
        let text = "H5GI-3TRB-7U4N-DT5W-UYEV-IXPI-IKWP-ZZ4C-PLCS-WJVU-R7OI-LNJY-JHVJ-PVQG-MUDN-3TPD"
        let modules = try TerminalQRCode.modules(text)
        #expect(
            modules.count >= 21 && (modules.count - 17) % 4 == 0 && modules.allSatisfy { $0.count == modules.count })
        // The three finder patterns: dark 7x7 corners with a light ring.
        #expect(modules[0][0] && modules[0][6] && modules[6][0] && !modules[1][1] && modules[3][3])
        #expect(modules[0][modules.count - 1] && modules[modules.count - 1][0])
        let drawn = try TerminalQRCode.render(text).split(separator: "\n")
        #expect(drawn.count == (modules.count + 8 + 1) / 2 && drawn.allSatisfy { $0.count == modules.count + 8 })
    }
}
