// ListenRegistryTests -- listens shared by streams, tags for queries, confirmation, data waiters.

import CanopyCore
import Testing

@testable import CanopyClient

@Suite struct ListenRegistryTests {
    let room = ListenKey(path: Path(segments: ["rooms", "a"]), query: nil)
    let top = ListenKey(path: Path(segments: ["rooms"]), query: QuerySpec(index: .key, limit: .first(2)))

    @Test func aListenStartsWithItsFirstUserAndEndsWithItsLast() {
        var registry = ListenRegistry()
        #expect(registry.retain(room) == true)
        #expect(registry.retain(room) == false)
        #expect(registry[room]?.observers == 2)
        #expect(registry.release(room) == nil)
        let ended = registry.release(room)
        #expect(ended?.observers == 0 && registry[room] == nil)
        // A new listen of the same key is a different one: replies to the old `q` are ignored.
        #expect(registry.retain(room) == true)
        #expect(registry[room]?.serial != ended?.serial)
        #expect(registry.confirm(room, serial: ended?.serial ?? 0) == false)
    }

    @Test func queriesGetTagsThatFindThemUntilTheyEnd() throws {
        var registry = ListenRegistry()
        _ = registry.retain(room)
        _ = registry.retain(top)
        #expect(registry[room]?.tag == nil)
        let tag = try #require(registry[top]?.tag)
        #expect(registry.key(forTag: tag) == top)
        registry.remove(top)
        #expect(registry.key(forTag: tag) == nil)
    }

    @Test func aConfirmedDefaultListenCoversWhatIsBelowItUntilTheConnectionDrops() throws {
        var registry = ListenRegistry()
        let below = ListenKey(path: Path(segments: ["rooms", "a", "title"]), query: nil)
        _ = registry.retain(room)
        #expect(registry.hasDefaultListen(atOrAbove: below.path))
        #expect(!registry.isComplete(below))
        let serial = try #require(registry[room]?.serial)
        #expect(registry.confirm(room, serial: serial) == true)
        #expect(registry.isComplete(room) && registry.isComplete(below))
        #expect(!registry.isComplete(top))
        registry.connectionLost()
        #expect(!registry.isComplete(below))
    }

    @Test func streamsOfARefusedListenAreRemovedTogether() {
        var registry = ListenRegistry()
        let (_, continuation) = AsyncThrowingStream<DataSnapshot, any Error>.makeStream()
        let first = registry.addObserver(Observer(path: room.path, spec: .default, key: room, continuation: continuation))
        let second = registry.addObserver(Observer(path: top.path, spec: .default, key: top, continuation: continuation))
        let skipped = registry.skipObserverID()
        #expect(first != second && skipped > second)
        let removed = registry.removeObservers(of: room)
        #expect(removed.map(\.path) == [room.path])
        #expect(Array(registry.observers.keys) == [second])
    }
}
