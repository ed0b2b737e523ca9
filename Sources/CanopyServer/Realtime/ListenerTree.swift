// ListenerTree -- listen points arranged as a tree of paths, so a change finds its listeners without a scan.

import CanopyCore

/// Groups of listeners keyed by path; each group shares one (location, query) so events are serialized once.
/// Loop-confined.
final class ListenerTree<Group: AnyObject> {
    private final class Point {
        var groups: [Group] = []
        var children: [JSONKey: Point] = [:]
    }
    private let top = Point()
    /// Groups inserted so far: a fan-out worked out before a batch is visible holds only if none was inserted since.
    private(set) var insertions: UInt64 = 0

    /// Whether no group is left.
    var isEmpty: Bool { top.groups.isEmpty && top.children.isEmpty }

    /// Adds `group` at `path`.
    func insert(_ group: Group, at path: Path) {
        insertions &+= 1
        var point = top
        for key in path.segments {
            let k = JSONKey(key)
            if let next = point.children[k] {
                point = next
            } else {
                let created = Point()
                point.children[k] = created
                point = created
            }
        }
        point.groups.append(group)
    }

    /// Removes `group` from `path`, pruning empty points.
    func remove(_ group: Group, at path: Path) {
        var trail: [(Point, JSONKey)] = []
        var point = top
        for key in path.segments {
            let k = JSONKey(key)
            guard let next = point.children[k] else { return }
            trail.append((point, k))
            point = next
        }
        point.groups.removeAll { $0 === group }
        while let (parent, key) = trail.last, let child = parent.children[key], child.groups.isEmpty,
            child.children.isEmpty
        {
            parent.children[key] = nil
            trail.removeLast()
        }
    }

    /// Every group whose location overlaps `path`: at an ancestor of it, at it, or below it.
    /// Costs the depth of `path` plus the size of the listen subtree under it.
    func groups(overlapping path: Path) -> [Group] {
        var found: [Group] = []
        forEachGroup(overlapping: [path]) { group, _ in found.append(group) }
        return found
    }

    /// Calls `body(group, path)` with `groups(overlapping: path)` of each of `paths` in turn. Consecutive paths that
    /// begin with the same keys (a publish's thousands of item paths, which come in tree order) share the walk down
    /// those keys instead of hashing each of them again.
    func forEachGroup(overlapping paths: [Path], _ body: (Group, Path) -> Void) {
        // walked[i]: the point after the first i keys of the path before (walked[0] is the top).
        var walked: [Point] = [top]
        var previous: [String] = []
        for path in paths {
            let segments = path.segments
            let limit = min(previous.count, segments.count, walked.count - 1)
            var shared = 0
            while shared < limit, sameKey(previous[shared], segments[shared]) { shared += 1 }
            walked.removeSubrange((shared + 1)...)
            previous = segments
            var complete = true
            for key in segments[shared...] {
                guard let next = walked[walked.count - 1].children[JSONKey(key)] else {
                    complete = false
                    break
                }
                walked.append(next)
            }
            for point in walked {
                for group in point.groups { body(group, path) }
            }
            guard complete, let last = walked.last else { continue }
            Self.forEachGroup(below: last) { body($0, path) }
        }
    }

    /// Every group (for rules changes).
    func allGroups() -> [Group] {
        var found = top.groups
        Self.forEachGroup(below: top) { found.append($0) }
        return found
    }

    /// Calls `body` with each group in the points below `point` (not its own).
    private static func forEachGroup(below point: Point, _ body: (Group) -> Void) {
        var stack = Array(point.children.values)
        while let next = stack.popLast() {
            for group in next.groups { body(group) }
            stack += next.children.values
        }
    }
}
