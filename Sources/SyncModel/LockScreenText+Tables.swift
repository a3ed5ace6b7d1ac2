extension LockScreenText {
    /// Unicode's Default_Ignorable_Code_Point ranges (Unicode 15.1), listed here so that the
    /// definition does not move with the platform's Unicode tables; most of them are Cf anyway.
    public static let invisibleRanges: [ClosedRange<UInt32>] = [
        0x00AD...0x00AD, 0x034F...0x034F, 0x061C...0x061C, 0x115F...0x1160, 0x17B4...0x17B5, 0x180B...0x180F,
        0x200B...0x200F, 0x202A...0x202E, 0x2060...0x206F, 0x3164...0x3164, 0xFE00...0xFE0F, 0xFEFF...0xFEFF,
        0xFFA0...0xFFA0, 0xFFF0...0xFFF8, 0x1BCA0...0x1BCA3, 0x1D173...0x1D17A, 0xE0000...0xE0FFF,
    ]

    /// What a scalar reads as after NFKC, from Unicode's confusables.txt: Cyrillic, Greek,
    /// Armenian and Cherokee letters and Latin small capitals drawn like a Latin letter, the dotted
    /// and dotless `i`, and the `:`-like and `=`-like symbols that NFKC leaves alone. The table is
    /// part of the sanitiser's definition (docs/notifications.md lists it).
    public static let confusables: [Unicode.Scalar: Unicode.Scalar] = {
        let pairs: [(UInt32, Unicode.Scalar)] = [
            // Cyrillic small letters
            (0x0430, "a"), (0x0435, "e"), (0x043E, "o"), (0x0440, "p"), (0x0441, "c"), (0x0443, "y"),
            (0x0445, "x"), (0x0455, "s"), (0x0456, "i"), (0x0458, "j"), (0x04BB, "h"), (0x04CF, "l"),
            (0x0501, "d"), (0x051B, "q"), (0x051D, "w"),
            // Cyrillic capital letters
            (0x0405, "S"), (0x0406, "I"), (0x0408, "J"), (0x0410, "A"), (0x0412, "B"), (0x0415, "E"),
            (0x041A, "K"), (0x041C, "M"), (0x041D, "H"), (0x041E, "O"), (0x0420, "P"), (0x0421, "C"),
            (0x0422, "T"), (0x0425, "X"), (0x04AE, "Y"), (0x051A, "Q"), (0x051C, "W"),
            // Greek letters
            (0x0391, "A"), (0x0392, "B"), (0x0395, "E"), (0x0396, "Z"), (0x0397, "H"), (0x0399, "I"),
            (0x039A, "K"), (0x039C, "M"), (0x039D, "N"), (0x039F, "O"), (0x03A1, "P"), (0x03A4, "T"),
            (0x03A5, "Y"), (0x03A7, "X"), (0x03B1, "a"), (0x03B9, "i"), (0x03BD, "v"), (0x03BF, "o"),
            (0x03C1, "p"),
            // Armenian letters
            (0x054D, "U"), (0x054F, "S"), (0x0555, "O"), (0x0561, "w"), (0x0563, "q"), (0x0566, "q"),
            (0x0570, "h"), (0x0578, "n"), (0x057C, "n"), (0x057D, "u"), (0x0581, "g"), (0x0584, "f"),
            (0x0585, "o"),
            // Cherokee letters
            (0x13A0, "D"), (0x13A1, "R"), (0x13A2, "T"), (0x13A5, "i"), (0x13A9, "Y"), (0x13AA, "A"),
            (0x13AB, "J"), (0x13AC, "E"), (0x13B3, "W"), (0x13B7, "M"), (0x13BB, "H"), (0x13BD, "Y"),
            (0x13C0, "G"), (0x13C2, "h"), (0x13C3, "Z"), (0x13CF, "b"), (0x13D2, "R"), (0x13D4, "W"),
            (0x13D5, "S"), (0x13D9, "V"), (0x13DA, "S"), (0x13DE, "L"), (0x13DF, "C"), (0x13E2, "P"),
            (0x13E6, "K"), (0x13E7, "d"), (0x13F3, "G"), (0x13F4, "B"),
            // Latin: dotted and dotless i, small capitals
            (0x0130, "I"), (0x0131, "i"), (0x1D04, "c"), (0x1D0F, "o"), (0x1D1C, "u"), (0x1D20, "v"),
            (0x1D21, "w"), (0x1D22, "z"),
            // Colon-like symbols
            (0x02D0, ":"), (0x02F8, ":"), (0x0589, ":"), (0x05C3, ":"), (0x0703, ":"), (0x0704, ":"),
            (0x0903, ":"), (0x0A83, ":"), (0x16EC, ":"), (0x1803, ":"), (0x1809, ":"), (0x205A, ":"),
            (0x2236, ":"), (0xA4FD, ":"), (0xA789, ":"),
            // Equals-like symbols
            (0x1400, "="), (0x2E40, "="), (0x30A0, "="), (0xA4FF, "="), (0xA78A, "="),
        ]
        return Dictionary(uniqueKeysWithValues: pairs.map { (Unicode.Scalar($0.0)!, $0.1) })
    }()
}
