import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization
import Testing

@Suite("Timestamps")
struct TimestampTests {
    @Test(
        "PostgREST forms parse",
        arguments: [
            ("2026-01-01T00:00:00+00:00", 1_767_225_600.0), ("2026-01-01T00:00:00.5Z", 1_767_225_600.5),
            ("2026-01-01 01:00:00.25+01:00", 1_767_225_600.25),
            ("2026-01-01T00:00:00.123456-00:30", 1_767_227_400.123456),
        ])
    func parse(text: String, expected: Double) throws {
        let date = try #require(Timestamp.parse(text))
        #expect(abs(date.timeIntervalSince1970 - expected) < 1e-6)
    }

    @Test(
        "garbage does not parse",
        arguments: [
            "", "2026-01-01", "2026-13-01T00:00:00Z", "2026-01-01T00:00:00", "2026-01-01T00:00:00+0x:00", "yesterday",
        ])
    func rejects(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test("formatting round-trips to the microsecond")
    func roundTrip() throws {
        let date = Date(timeIntervalSince1970: 1_767_225_600.123456)
        let text = Timestamp.format(date)
        #expect(text == "2026-01-01T00:00:00.123456+00:00")
        #expect(abs(try #require(Timestamp.parse(text)).timeIntervalSince1970 - date.timeIntervalSince1970) < 1e-6)
    }

    @Test("formatting writes what printf writes, digit for digit, across the range")
    func formatMatchesPrintf() {
        var generator = SystemRandomNumberGenerator()
        var instants: [Double] = [0, 0.000001, 59.999999, 951_782_400, 4_102_444_799.999999, 253_402_300_799.999999]
        for _ in 0..<2_000 { instants.append(Double.random(in: 0..<253_402_300_800, using: &generator)) }
        for instant in instants {
            let date = Date(timeIntervalSince1970: instant)
            var micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
            if micros < 0 { micros = 0 }
            var seconds = time_t(Int64(micros) / 1_000_000)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let reference = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%06d+00:00", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec),
                Int(Int64(micros) % 1_000_000))
            #expect(Timestamp.format(date) == reference, "at \(instant)")
        }
    }
}
