// CSVTable -- a small RFC 4180 reader for the console's uploads (attendee directories, personal-item imports).
//
// Fields are separated by commas, records by LF or CRLF; a field in double quotes may hold commas, line breaks and
// `""` for a quote. The first record is the header; names are matched case-insensitively and trimmed. Blank lines
// are skipped. `row` numbers are the 1-based line of the record's start in the file (the header is row 1), as a
// spreadsheet shows them.

/// A parsed CSV document: a header and its data rows.
public struct CSVTable: Sendable {
    /// One data record.
    public struct Row: Sendable {
        /// The line of the file the record starts on (the header is line 1).
        public let line: Int
        /// The fields, as many as the record has (missing trailing fields read as "").
        public let fields: [String]
    }

    /// The header names, trimmed and lowercased.
    public let header: [String]
    /// The data records in file order.
    public let rows: [Row]

    /// The most records an upload may hold.
    public static let maxRows = 1_000_000

    /// Parses `text`.
    /// - Throws: `CSVError` for an empty document, an unterminated quoted field or too many rows.
    public init(parsing text: String) throws(CSVError) {
        var records: [Row] = []
        var fields: [String] = []
        var field = ""
        var line = 1
        var recordLine = 1
        var inQuotes = false
        var quotedFieldLine = 1
        var scalars = Array(text.unicodeScalars)
        if scalars.first == "\u{FEFF}" { scalars.removeFirst() }
        var i = 0
        func endRecord() throws(CSVError) {
            fields.append(field)
            field = ""
            if !(fields.count == 1 && fields[0].trimmingSpaces.isEmpty) {
                guard records.count <= CSVTable.maxRows else { throw CSVError("more than \(CSVTable.maxRows) rows") }
                records.append(Row(line: recordLine, fields: fields))
            }
            fields = []
        }
        while i < scalars.count {
            let c = scalars[i]
            if inQuotes {
                if c == "\"" {
                    if i + 1 < scalars.count, scalars[i + 1] == "\"" {
                        field.unicodeScalars.append("\"")
                        i += 1
                    } else {
                        inQuotes = false
                    }
                } else {
                    if c == "\n" { line += 1 }
                    field.unicodeScalars.append(c)
                }
            } else if c == "\"" && field.trimmingSpaces.isEmpty {
                field = ""
                inQuotes = true
                quotedFieldLine = line
            } else if c == "," {
                fields.append(field)
                field = ""
            } else if c == "\r" && i + 1 < scalars.count && scalars[i + 1] == "\n" {
                // the LF ends the record
            } else if c == "\n" || c == "\r" {
                try endRecord()
                line += 1
                recordLine = line
            } else {
                field.unicodeScalars.append(c)
            }
            i += 1
        }
        if inQuotes { throw CSVError("line \(quotedFieldLine): a quoted field is not closed") }
        if !field.isEmpty || !fields.isEmpty { try endRecord() }
        guard let first = records.first else { throw CSVError("the CSV is empty; it needs a header row") }
        header = first.fields.map { $0.trimmingSpaces.lowercased() }
        rows = Array(records.dropFirst())
    }

    /// The index of the first header named one of `names` (lowercase).
    public func column(_ names: String...) -> Int? {
        for name in names { if let index = header.firstIndex(of: name) { return index } }
        return nil
    }

    /// The trimmed field of `row` in `column`, "" when absent.
    public static func value(_ row: Row, _ column: Int?) -> String {
        guard let column, column < row.fields.count else { return "" }
        return row.fields[column].trimmingSpaces
    }
}

/// A CSV document that cannot be read.
public struct CSVError: Error, Sendable, Hashable {
    /// What is wrong, with the line when known.
    public let message: String
    public init(_ message: String) { self.message = message }
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        var scalars = Substring(self).unicodeScalars
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
