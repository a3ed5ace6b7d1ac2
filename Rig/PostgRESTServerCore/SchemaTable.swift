/// A table of the exposed schema as the grammar needs it: its columns and primary key. The
/// server loads these from PostgreSQL (its schema cache); the fuzz targets build one by hand.
package struct SchemaTable: Sendable {
    /// One column.
    package struct Column: Sendable {
        package let name: String
        /// `format_type()` of the column, used to cast filter values (`uuid`, `timestamp with time zone`, ...).
        package let type: String

        package init(name: String, type: String) {
            self.name = name
            self.type = type
        }
    }

    package let name: String
    package let columns: [Column]
    package let primaryKey: [String]

    package init(name: String, columns: [Column], primaryKey: [String]) {
        self.name = name
        self.columns = columns
        self.primaryKey = primaryKey
    }

    /// The column called `name`, if the table has one.
    package func column(_ name: String) -> Column? { columns.first { $0.name == name } }
}
