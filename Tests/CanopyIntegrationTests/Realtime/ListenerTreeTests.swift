// ListenerTreeTests -- a batch's walk over its listen groups: the walk that shares the keys consecutive paths begin
// with finds exactly the groups a walk per path finds, in the same order, and a group's nodes found from a shared
// parent are the nodes at its location.

import CanopyCore
import Testing

@testable import CanopyServer

@Suite struct ListenerTreeTests {
    final class Group {
        let id: Int
        init(_ id: Int) { self.id = id }
    }

    /// Paths over a few keys per level, so that random ones share beginnings, hit listened points and miss them.
    private static func randomPath(_ random: inout SplitMix64, depth: ClosedRange<Int> = 0...5) -> Path {
        let keys = ["a", "b", "users", "u1", "u2", "content", "x\"y", "é"]
        let count = Int.random(in: depth, using: &random)
        return Path(segments: (0..<count).map { _ in keys[Int.random(in: 0..<keys.count, using: &random)] })
    }

    @Test(arguments: 0..<40)
    func sharingTheWalkFindsWhatAWalkPerPathFinds(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let tree = ListenerTree<Group>()
        for id in 0..<Int.random(in: 1...30, using: &random) {
            tree.insert(Group(id), at: Self.randomPath(&random))
        }
        var paths = (0..<Int.random(in: 1...60, using: &random)).map { _ in Self.randomPath(&random) }
        // A publish's paths come in tree order; a batch of single writes in any order.
        if seed % 2 == 0 { paths.sort { $0.description < $1.description } }

        var expected: [String] = []
        for path in paths {
            for group in tree.groups(overlapping: path) { expected.append("\(group.id)@\(path)") }
        }
        var found: [String] = []
        tree.forEachGroup(overlapping: paths) { group, path in found.append("\(group.id)@\(path)") }
        #expect(found == expected)
    }

    @Test(arguments: 0..<20)
    func aLocationsNodesAreTheNodesAtItsPath(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        func randomTree() -> Node {
            var root = Node.empty
            for index in 0..<60 {
                let path = Self.randomPath(&random, depth: 1...5)
                root = root.setting(Node(leaf: .int(Int64(index))), at: path)
            }
            return root
        }
        let before = randomTree()
        let after = Bool.random(using: &random) ? randomTree() : before.setting(.empty, at: Self.randomPath(&random))
        var locations = ListenGroup.Locations()
        for round in 0..<80 {
            // Now and then other trees, as the next operation of a batch brings.
            let (old, new) = round % 17 == 16 ? (after, before) : (before, after)
            let path = Self.randomPath(&random)
            let nodes = locations.nodes(at: path, before: old, after: new)
            #expect(nodes.old == old.node(at: path), "\(path)")
            #expect(nodes.new == new.node(at: path), "\(path)")
        }
    }
}
