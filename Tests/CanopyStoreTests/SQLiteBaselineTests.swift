// SQLiteBaselineTests -- the benchmark yardstick writes durably, singly and grouped.
import Foundation
import Testing

@testable import CanopyStore

@Suite struct SQLiteBaselineTests {
    let directory = TemporaryDirectory()

    @Test func upsertsSinglyAndInGroups() throws {
        let path = directory.file()
        let baseline = try SQLiteBaseline(path: path)
        try baseline.upsert(key: "a", value: "1")
        try baseline.upsert(key: "a", value: "2")
        try baseline.upsert([(key: "b", value: "3"), (key: "c", value: "4")])
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            try? baseline.upsert(key: "t\(index)", value: "\(index)")
        }
        let reader = try SQLiteConnection(path: path, mode: .readOnly)
        #expect(
            try reader.queryText("SELECT group_concat(key || '=' || value, ',') FROM kv")
                == "a=2,b=3,c=4,t0=0,t1=1,t2=2,t3=3")
        #expect(try reader.queryText("PRAGMA journal_mode") == "wal")
    }

    @Test func aFailedGroupWritesNothing() throws {
        var options = StoreOptions()
        options.maximumPageCount = 8
        let path = directory.file()
        let baseline = try SQLiteBaseline(path: path, options: options)
        try baseline.upsert(key: "keep", value: "1")
        let big = String(repeating: "z", count: 200_000)
        #expect(throws: StoreError.self) { try baseline.upsert([(key: "x", value: "1"), (key: "big", value: big)]) }
        let reader = try SQLiteConnection(path: path, mode: .readOnly)
        #expect(try reader.queryText("SELECT group_concat(key) FROM kv") == "keep")
    }
}
