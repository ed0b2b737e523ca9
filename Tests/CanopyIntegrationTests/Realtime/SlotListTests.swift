// SlotListTests -- the listen group's member list: O(1) add and remove keep exactly the members still in it.

import CanopyCore
import Testing

@testable import CanopyServer

@Suite struct SlotListTests {
    final class Member: SlotListMember {
        let id: Int
        var slot = -1
        init(_ id: Int) { self.id = id }
    }

    private func ids(_ list: SlotList<Member>) -> Set<Int> { Set(list.map(\.id)) }

    @Test func aMovedMemberCanStillBeRemoved() {
        let members = (0..<5).map(Member.init)
        var list = SlotList<Member>()
        for member in members { list.add(member) }
        list.remove(members[0])  // the last member (4) takes slot 0
        #expect(ids(list) == [1, 2, 3, 4])
        list.remove(members[4])
        #expect(ids(list) == [1, 2, 3])
        list.remove(members[4])  // not in the list any more: nothing happens
        list.remove(members[3])  // the last one
        #expect(ids(list) == [1, 2])
        #expect(list.count == 2)
    }

    @Test func randomAddsAndRemovesMatchASet() {
        var rng = SplitMix64(seed: 7)
        let members = (0..<40).map(Member.init)
        var list = SlotList<Member>()
        var model = Set<Int>()
        for _ in 0..<5_000 {
            let member = members[rng.next(below: members.count)]
            if model.contains(member.id) {
                list.remove(member)
                model.remove(member.id)
            } else if rng.next(below: 2) == 0 {
                list.add(member)
                model.insert(member.id)
            } else {
                list.remove(member)  // absent: a no-op
            }
            #expect(ids(list) == model)
            #expect(list.count == model.count)
        }
    }
}
