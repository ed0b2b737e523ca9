// RuleNode -- one node of the compiled rules tree (immutable once built).
import CanopyCore

/// A `.read`/`.write`/`.validate` value: a constant or a checked expression.
enum CompiledRule: Sendable {
    case constant(Bool)
    case expression(Expression)
}

/// A node of the rules tree: its rules, its named children and at most one wildcard child.
final class RuleNode: Sendable {
    /// The rule path of this node, e.g. `/users/$uid` (for reasons and errors).
    let rulePath: String
    /// The key this node has in its parent (empty for the root).
    let key: String
    let read: CompiledRule?
    let write: CompiledRule?
    let validate: CompiledRule?
    let indexOn: [String]
    let children: [String: RuleNode]
    /// The wildcard child and its name (`$uid`).
    let wildcard: RuleNode?
    let wildcardName: String?
    /// True if this node or any node below it has a `.validate` rule.
    let hasValidateBelow: Bool

    init(
        key: String, rulePath: String, read: CompiledRule?, write: CompiledRule?, validate: CompiledRule?, indexOn: [String],
        children: [String: RuleNode], wildcard: RuleNode?, wildcardName: String?
    ) {
        self.key = key
        self.rulePath = rulePath
        self.read = read
        self.write = write
        self.validate = validate
        self.indexOn = indexOn
        self.children = children
        self.wildcard = wildcard
        self.wildcardName = wildcardName
        hasValidateBelow =
            validate != nil || children.values.contains(where: \.hasValidateBelow) || wildcard?.hasValidateBelow == true
    }

    /// The child that governs `key`: the named child wins over the wildcard. Keys compare by exact bytes.
    @inline(__always)
    func child(for key: String) -> (node: RuleNode, isWildcard: Bool)? {
        // Swift String hashing and `==` are canonical-equivalence based; keys must match byte for byte.
        if let named = children[key], RuleValue.sameBytes(named.key, key) { return (named, false) }
        if let wildcard { return (wildcard, true) }
        return nil
    }
}
