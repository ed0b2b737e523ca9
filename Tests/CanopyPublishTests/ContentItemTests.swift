// ContentItemTests -- parsing items in the shapes the seed and Firebase produce, and refusing the rest.

@testable import CanopyCore
import CanopyPublish
import Testing

@Suite struct ContentItemTests {
    func item(_ json: JSONValue, key: String = "k") throws(PublishError) -> ContentItem {
        try ContentItem(key: key, node: Node.literal(json))
    }

    @Test(arguments: [nil, JSONValue.null, .array([]), .object([])] as [JSONValue?])
    func emptyListShapesMeanEmpty(list: JSONValue?) throws {
        var fields: [JSONMember] = [JSONMember("order", 1)]
        if let list { fields += ["tierIds", "groupIds", "attendeeIds"].map { JSONMember($0, list) } }
        let parsed = try item(.object(fields))
        #expect(parsed.tierIds.isEmpty && parsed.groupIds.isEmpty && parsed.attendeeIds.isEmpty)
        #expect(parsed.isGlobal)
        #expect(parsed.isVisible(to: Attendee(id: "x")))
    }

    @Test func idsBecomeStringsInStoredOrderWithoutDuplicates() throws {
        let parsed = try item([
            "order": 2.5, "type": "web", "tierIds": [101, "default", 101], "groupIds": ["13": true, "11": true],
            "attendeeIds": ["100201", 100202],
        ])
        #expect(parsed.order == 2.5)
        #expect(parsed.type == "web")
        #expect(parsed.tierIds == ["101", "default"])
        #expect(parsed.groupIds == ["11", "13"])
        #expect(parsed.attendeeIds == ["100201", "100202"])
        #expect(!parsed.isGlobal && !parsed.isCSV)
    }

    @Test func visibilityIsAnyListMatchingOrCheckAll() throws {
        let parsed = try item(["order": 0, "tierIds": [101], "groupIds": [14], "attendeeIds": ["7"]])
        #expect(parsed.isVisible(to: Attendee(id: "1", tierId: "101")))
        #expect(parsed.isVisible(to: Attendee(id: "1", groupIds: ["3", "14"])))
        #expect(parsed.isVisible(to: Attendee(id: "7")))
        #expect(!parsed.isVisible(to: Attendee(id: "1", tierId: "102", groupIds: ["13"])))
        let everyone = try item(["order": 0, "tierIds": [101], "checkAll": true])
        #expect(everyone.isVisible(to: Attendee(id: "1", tierId: "102")))
    }

    @Test func csvRowsGetKeysAndInheritOrderAndType() throws {
        let parsed = try item(
            [
                "order": 8, "type": "textCSV", "title": "Mentor",
                "rawData": [["attendeeIds": ["1"], "text": "a"], ["order": 9, "type": "web", "attendeeIds": [2]]],
            ], key: "-P")
        #expect(parsed.isCSV && !parsed.isGlobal)
        #expect(!parsed.isVisible(to: Attendee(id: "1")))
        #expect(parsed.rawData.map(\.copyKey) == ["-P0", "-P1"])
        #expect(parsed.rawData.map(\.attendeeIds) == [["1"], ["2"]])
        #expect(parsed.rawData[0].copy.child("order").value == .int(8))
        #expect(parsed.rawData[0].copy.child("type").value == .string("text"))
        #expect(!parsed.rawData[0].copy.hasChild("attendeeIds"))
        #expect(parsed.rawData[1].copy.child("order").value == .int(9))
        #expect(parsed.rawData[1].copy.child("type").value == .string("web"))
        #expect(
            parsed.rawData[0].isVisible(to: Attendee(id: "1")) && !parsed.rawData[0].isVisible(to: Attendee(id: "2")))
    }

    @Test func placedCopiesArePackedAsTheirJSONParses() throws {
        // A stored copy of a placed item is parsed from JSON, so packed: the copy a publish places compares with it
        // by bytes only when it is packed too (`PackedChildren.sameData`).
        let parsed = try ContentItem(
            key: "-P",
            node: Node.from(json: [
                "order": 8, "type": "textCSV", "title": "Mentor", "tierIds": [101], "at": ["day": 2],
                "rawData": [["attendeeIds": ["1"], "text": "a"]],
            ]))
        let copy = try Node.from(json: [
            "order": 8, "type": "textCSV", "title": "Mentor", "at": ["day": 2],
            "rawData": [["attendeeIds": ["1"], "text": "a"]],
        ])
        #expect(parsed.privateCopy.children.isPacked && parsed.privateCopy.hasSameData(as: copy))
        let row = parsed.rawData[0].copy
        let rowCopy = try Node.from(json: ["order": 8, "type": "text", "text": "a"])
        #expect(row.children.isPacked && row.hasSameData(as: rowCopy))
        // Nothing to strip: the parsed node itself.
        let plain = try Node.from(json: ["order": 1, "title": "Doors"])
        let unstripped = try ContentItem(key: "d", node: plain)
        #expect(unstripped.privateCopy === plain)
    }

    /// (item JSON, expected error kind, field named by the error).
    static let invalidItems: [(String, PublishError.Kind, String)] = [
        (#"{"type": "text"}"#, .missingOrder, "order"),
        (#"{"order": "3"}"#, .nonNumericOrder, "order"),
        (#"{"order": true}"#, .nonNumericOrder, "order"),
        (#"{"order": {"a": 1}}"#, .nonNumericOrder, "order"),
        (#"{"order": 1, "type": 5}"#, .invalidField, "type"),
        (#"{"order": 1, "checkAll": "yes"}"#, .invalidField, "checkAll"),
        (#"{"order": 1, "tierIds": 101}"#, .invalidField, "tierIds"),
        (#"{"order": 1, "tierIds": [[1]]}"#, .invalidField, "tierIds/0"),
        (#"{"order": 1, "groupIds": [false]}"#, .invalidField, "groupIds/0"),
        (#"{"order": 1, "attendeeIds": ["a/b"]}"#, .invalidID, "attendeeIds/0"),
        (#"{"order": 1, "tierIds": [""]}"#, .invalidID, "tierIds/0"),
        (#"{"order": 1, "type": "textCSV", "rawData": "x"}"#, .invalidField, "rawData"),
        (#"{"order": 1, "type": "textCSV", "rawData": [1]}"#, .invalidField, "rawData/0"),
        (#"{"order": 1, "type": "textCSV", "rawData": [{"order": "x"}]}"#, .nonNumericOrder, "rawData/0/order"),
    ]

    @Test(arguments: invalidItems)
    func invalidItemsNameTheField(json: String, kind: PublishError.Kind, field: String) throws {
        let value = try JSONValue.parse(json)
        #expect(throws: PublishError(kind, key: "k", field: field)) { try item(value) }
    }

    @Test func aLeafIsNotAnItem() {
        #expect(throws: PublishError(.itemNotObject, key: "k")) { try item("just text") }
    }

    @Test func errorsNeverEchoValues() {
        let error = PublishError(.invalidField, key: "k", field: "tierIds/0")
        #expect(error.userMessage.contains("tierIds/0"))
        #expect(error.description.hasPrefix("invalid_item: "))
    }
}
