// PublishHistoryTests -- history ids increase with time and within one millisecond.

import CanopyCore
import CanopyPublish
import Testing

@Suite struct PublishHistoryTests {
    @Test func idsArePushIDShapedAndOrderedByTime() {
        let a = PublishHistory.nextID(existing: .empty, now: 1_700_000_000_000)
        let b = PublishHistory.nextID(existing: .empty, now: 1_700_000_000_001)
        #expect(a.utf8.count == 20 && b.utf8.count == 20)
        #expect(compareKeys(a, b) < 0)
        #expect(a.hasSuffix("------------"))
    }

    @Test func sameMillisecondOrEarlierClockStillIncreases() {
        var history = Node.empty
        var previous = ""
        for now: Int64 in [5_000, 5_000, 5_000, 4_000, 5_001] {
            let id = PublishHistory.nextID(existing: history, now: now)
            #expect(compareKeys(previous, id) < 0, "\(previous) then \(id)")
            history = history.settingChild(id, Node(leaf: .int(now)))
            previous = id
        }
        #expect(history.childCount == 5)
    }

    @Test func aLastIdOfAllZsGrowsLonger() {
        let last = String(repeating: "z", count: 20)
        let history = Node.literal(.object([JSONMember(last, 1)]))
        let id = PublishHistory.nextID(existing: history, now: 0)
        #expect(compareKeys(last, id) < 0)
    }

    @Test func recordHoldsTheFacts() {
        let content = Node.literal(["a": ["order": 1]])
        let record = PublishHistory.record(content: content, now: 42, publisher: nil)
        #expect(record.child("publishedAt").value == .int(42))
        #expect(record.child("itemCount").value == .int(1))
        #expect(record.child("contentHash").value == .string(content.hash))
        #expect(!record.hasChild("content"))
        let version = PublishHistory.versionKey(content.child("a"))
        #expect(record.child("items").child("a").value == .string(version))
        #expect(!version.contains("/") && !version.contains("+") && !version.contains("="))
        #expect(!record.hasChild("publisher"))
    }
}
