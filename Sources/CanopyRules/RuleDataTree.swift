// RuleDataTree -- the read-only view of the database that rules evaluate against.
import CanopyCore

/// The data a rule can see, independent of how the database stores its tree.
///
/// Paths are arrays of keys from the root. Implementations must answer for any path, including
/// paths with keys that could never be stored (`child('a/b@c')` just finds nothing).
public protocol RuleDataTree {
    /// The string, number or boolean stored exactly at `path`; nil if nothing is there or the node has children.
    func primitive(at path: [String]) -> JSONValue?
    /// True if any data is stored at or below `path`.
    func exists(at path: [String]) -> Bool
    /// True if the node at `path` has at least one child.
    func hasChildren(at path: [String]) -> Bool
    /// The keys of the children of `path` (any order).
    func childKeys(at path: [String]) -> [String]
    /// The priority of the node at `path` (a string or number), or nil.
    func priority(at path: [String]) -> JSONValue?
}
