import Foundation

/// Text as the phone shows it: every character that renders as nothing, or that reorders what
/// follows, written out as `<U+XXXX>` so that what the person approves is what will run.
///
/// A command can hide its real effect behind characters a screen does not show: a bidirectional
/// override (U+202E) that displays `rm -rf ~` backwards, a zero-width space inside a word, a
/// control character. Made visible are: format characters (category Cf: bidi controls, zero-width
/// characters, the BOM, tag characters), every other default-ignorable code point (variation
/// selectors, fillers), controls (Cc) but the line feed and tab where lines are allowed, line and
/// paragraph separators, and unassigned or private-use code points.
public enum VisibleText {
    /// `text` with every hidden character written as `<U+XXXX>`.
    ///
    /// - Parameters:
    ///   - text: What the agent gave.
    ///   - keepsLines: Whether `\n` and `\t` stay as they are (a detail); else they are shown too.
    public static func make(_ text: String, keepsLines: Bool = false) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isHidden(scalar, keepsLines: keepsLines) {
                out.append(contentsOf: String(format: "<U+%04X>", scalar.value).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// Whether `scalar` is written out by ``make(_:keepsLines:)``.
    public static func isHidden(_ scalar: Unicode.Scalar, keepsLines: Bool = false) -> Bool {
        if keepsLines && (scalar == "\n" || scalar == "\t") { return false }
        let properties = scalar.properties
        switch properties.generalCategory {
        case .format, .control, .lineSeparator, .paragraphSeparator, .unassigned, .privateUse, .surrogate:
            return true
        default:
            return properties.isDefaultIgnorableCodePoint || properties.isNoncharacterCodePoint
        }
    }
}
