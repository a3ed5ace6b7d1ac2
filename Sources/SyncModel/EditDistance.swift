/// The edit distance between two short words, a swap of neighbours counting as one edit (the
/// optimal string alignment distance): `sycn` is one edit from `sync`, as a typist sees it.
package func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
    var rows = [Array(0...b.count)]
    for i in 1...a.count {
        var current = [i] + [Int](repeating: 0, count: b.count)
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            current[j] = min(rows[i - 1][j] + 1, current[j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                current[j] = min(current[j], rows[i - 2][j - 2] + 1)
            }
        }
        rows.append(current)
    }
    return rows[a.count][b.count]
}
