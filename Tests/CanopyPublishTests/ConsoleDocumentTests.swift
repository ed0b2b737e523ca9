// ConsoleDocumentTests -- the console's uploads read without a server: CSV quirks, directory documents, CSV
// imports and completeness by item type.

import CanopyCore
import CanopyPublish
import Testing

@Suite struct ConsoleDocumentTests {
    @Test func csvReadsQuotesLineBreaksAndSpreadsheetLineNumbers() throws {
        let table = try CSVTable(parsing: "\u{FEFF}ID, Email \r\n1,\"a, \"\"b\"\"\"\r\n\r\n2,\"two\nlines\"\n3,c")
        #expect(table.header == ["id", "email"])
        #expect(table.rows.map(\.line) == [2, 4, 6])
        #expect(table.rows.map { CSVTable.value($0, 1) } == ["a, \"b\"", "two\nlines", "c"])
        #expect(CSVTable.value(table.rows[0], 7) == "")
        #expect(throws: CSVError.self) { try CSVTable(parsing: "id\n\"open") }
        #expect(throws: CSVError.self) { try CSVTable(parsing: "\n \n") }
    }

    @Test func aDirectoryDocumentKeepsNamesAndCountsTiersAndGroups() throws {
        let document = try DirectoryDocument(document: [
            "eventId": "e", "tiers": [["id": 101, "name": "VIP"], ["id": "empty"]],
            "attendees": [
                ["id": 1, "tierId": 101, "groupIds": [11], "email": "A@x.com", "phone": "+1"],
                ["id": "2", "groupIds": [11, 12]],
            ],
        ])
        #expect(document.json["attendees"]?[0] == ["id": "1", "tierId": "101", "groupIds": ["11"], "email": "A@x.com"])
        let counts = document.counts()
        #expect(
            counts.tiers == [
                ["id": "101", "name": "VIP", "count": 1], ["id": "empty", "count": 0], ["id": "default", "count": 1],
            ])
        #expect(counts.groups == [["id": "11", "count": 2], ["id": "12", "count": 1]])
        #expect(document.idsByEmail == ["a@x.com": "1"])
        // What is stored parses back to the same directory.
        let again = try DirectoryDocument(document: document.json)
        #expect(again.directory.attendees == document.directory.attendees)
        #expect(throws: PublishError.self) { try DirectoryDocument(document: ["tiers": [["name": "x"]], "attendees": []]) }
    }

    @Test func aCSVDirectoryNamesTheLineOfABadRow() throws {
        let document = try DirectoryDocument.csv("id,name,tier,groups\n7,\"Doe, J\",,11|12 13\n")
        #expect(document.json["attendees"]?[0] == ["id": "7", "tierId": "default", "groupIds": ["11", "12", "13"], "name": "Doe, J"])
        #expect(throws: CSVError("row 3: the id is empty")) { try DirectoryDocument.csv("id,email\n1,a\n,b\n") }
        #expect(throws: CSVError("row 3: the id is not usable as a key or is listed twice")) {
            try DirectoryDocument.csv("id\n1\n1\n")
        }
        #expect(throws: CSVError.self) { try DirectoryDocument.csv("email\na@b\n") }
    }

    @Test func aTextImportCarriesTheDescriptionAsText() throws {
        let directory = try DirectoryDocument(document: ["attendees": [["id": "1", "email": "a@x.com"], ["id": "2"]]])
        let result = try CSVImport(
            csv: "id,description,title\n2,Hello,Hi\n3,Who,\n1,,\n", type: "text", title: "T", order: 4,
            directory: directory)
        #expect(result.imported == 1)
        #expect(result.total == 3)
        #expect(result.rejected.map(\.error) == ["not in the directory", "missing description"])
        let row = result.item?["rawData"]?[0]
        #expect(row == ["attendeeIds": ["2"], "checkAll": false, "order": 4, "type": "text", "title": "Hi", "text": "Hello"])
        #expect(result.item?["type"] == "textCSV")
        // The item it makes publishes: the row goes to attendee 2 only.
        let item = try ContentItem(key: "k", node: try Node.from(json: try #require(result.item)))
        #expect(item.rawData.map(\.copyKey) == ["k0"])
        #expect(PublishEngine.missingFields(of: item.raw).isEmpty)
    }

    @Test(arguments: [
        (#"{"order":1,"type":"text"}"#, ["text"]),
        (#"{"order":1,"type":"html","text":"  "}"#, ["text"]),
        (#"{"order":1,"type":"web","url":"https://x"}"#, [String]()),
        (#"{"order":1,"type":"video","url":7}"#, ["url"]),
        (#"{"order":1,"type":"survey"}"#, ["title"]),
        (#"{"order":1,"type":"custom"}"#, [String]()),
        (#"{"order":1,"type":"webCSV"}"#, ["target"]),
        (#"{"order":1,"type":"webCSV","rawData":[{"url":"u"},{"type":"text"}]}"#, ["rawData/1/text"]),
    ])
    func completenessByType(item: String, missing: [String]) throws {
        #expect(PublishEngine.missingFields(of: try Node.from(json: try JSONValue.parse(item))) == missing)
    }
}
