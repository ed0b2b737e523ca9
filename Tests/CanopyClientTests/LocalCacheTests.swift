// LocalCacheTests -- held server data: loading rows, windows, what is known, which rows to save.

import CanopyCore
import Testing

@testable import CanopyClient

@Suite struct LocalCacheTests {
    let rooms = Path(segments: ["rooms"])
    let roomA = Path(segments: ["rooms", "a"])

    @Test func rowsLoadShallowFirstSoADeeperRowKeepsItsOwnValue() {
        var cache = LocalCache()
        let skipped = cache.load([
            CachedValue(path: "/rooms/a", query: "", data: #"{"title":"newer"}"#),
            CachedValue(path: "/rooms", query: "", data: #"{"a":{"title":"older"},"b":1}"#),
            CachedValue(path: "/broken", query: "", data: "{not json"),
        ])
        #expect(skipped == 1)
        #expect(cache.serverTree.node(at: roomA).json(export: false) == ["title": "newer"])
        #expect(cache.isKnown(ListenKey(path: Path(segments: ["rooms", "b"]), query: nil)))  // under a known listen
        #expect(!cache.isKnown(ListenKey(path: Path(segments: ["broken"]), query: nil)))
    }

    @Test func aQueryReadsItsWindowUnlessCoveredByADefaultListen() throws {
        var cache = LocalCache()
        let key = ListenKey(path: rooms, query: QuerySpec(index: .key, limit: .last(1)))
        cache.setServer(try Node.from(json: ["a": 1, "b": 2]), at: rooms)
        cache.setWindow(key, [(rooms.child("b"), try Node.from(json: 2)), (roomA.child("x"), .empty)])
        #expect(cache.serverView(key, covered: false).json(export: false) == ["b": 2])
        #expect(cache.serverView(key, covered: true).json(export: false) == ["a": 1, "b": 2])
    }

    @Test func aChangedListenIsSavedWithTheKnownListensBelowIt() throws {
        var cache = LocalCache()
        let top = ListenKey(path: rooms, query: nil)
        let below = ListenKey(path: roomA, query: nil)
        cache.markKnown(top)
        cache.markKnown(below)
        #expect(cache.markDirty(top) == true)
        #expect(cache.markDirty(top) == false)  // a save is already due
        #expect(cache.takeDirty() == [top, below] as Set)
        #expect(cache.takeDirty().count == 0)
        let window = ListenKey(path: rooms, query: QuerySpec(index: .key, limit: .first(1)))
        let row = LocalCache.row(window, view: try Node.from(json: ["a": 1, "b": 2]))
        #expect(row.path == "/rooms" && row.data == #"{"a":1}"# && !row.query.isEmpty)
    }
}
