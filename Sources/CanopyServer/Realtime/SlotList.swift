// SlotList -- an unordered list of objects with O(1) insertion and removal, for the members of a listen group.
//
// Each member remembers its index. The last member takes the place of one that leaves, so thousands of sockets
// leaving one location at once (a dropped network) cost linear time, not quadratic. The order members are
// served in carries no meaning.

/// A member of a `SlotList`: it stores its index there (one list per member).
protocol SlotListMember: AnyObject {
    var slot: Int { get set }
}

/// Members in no particular order; a member belongs to at most one list.
struct SlotList<Member: SlotListMember>: Sequence {
    private var members: [Member] = []

    var isEmpty: Bool { members.isEmpty }
    var count: Int { members.count }

    mutating func add(_ member: Member) {
        member.slot = members.count
        members.append(member)
    }

    /// Removes `member`; nothing happens when it is not in the list.
    mutating func remove(_ member: Member) {
        let slot = member.slot
        guard slot >= 0, slot < members.count, members[slot] === member else { return }
        let last = members.removeLast()
        if slot < members.count {
            members[slot] = last
            last.slot = slot
        }
    }

    func makeIterator() -> IndexingIterator<[Member]> { members.makeIterator() }
}
