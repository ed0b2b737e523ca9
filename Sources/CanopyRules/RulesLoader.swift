// RulesLoader -- turns a parsed rules document into a RuleNode tree, collecting every problem.
//
// Document shape (Rules.md#Document): `{"rules": <node>}` and nothing else. A node is an
// object; `.read`/`.write`/`.validate` are booleans or expression strings, `.indexOn` a string or
// an array of strings, other `.`-keys are refused. Other keys are children (objects); a `$name`
// key is the node's only wildcard, and a wildcard name may not be reused deeper on the same path.
import CanopyCore

struct RulesLoader {
    private(set) var errors: [RulesError] = []
    static let maxDepth = 64

    /// Builds the tree; returns nil if any problem was found (all of them are in `errors`).
    mutating func load(_ document: JSONValue) -> RuleNode? {
        guard case .object(let members) = document else {
            errors.append(RulesError(path: "/", reason: "a rules document must be a JSON object"))
            return nil
        }
        guard members.count == 1, members[0].key == "rules" else {
            errors.append(RulesError(path: "/", reason: "a rules document must have exactly one key, \"rules\""))
            return nil
        }
        let root = node(members[0].value, keys: [], captures: [], documentPath: "/rules")
        return errors.isEmpty ? root : nil
    }

    private mutating func node(_ json: JSONValue, keys: [String], captures: [String], documentPath: String)
        -> RuleNode?
    {
        guard case .object(let members) = json else {
            errors.append(RulesError(path: documentPath, reason: "a rule node must be an object"))
            return nil
        }
        guard keys.count <= RulesLoader.maxDepth else {
            errors.append(RulesError(path: documentPath, reason: "rules are nested too deeply"))
            return nil
        }
        var read: CompiledRule?
        var write: CompiledRule?
        var validate: CompiledRule?
        var indexOn: [String] = []
        var children: [String: RuleNode] = [:]
        var wildcard: RuleNode?
        var wildcardName: String?
        let rulePath = keys.isEmpty ? "/" : "/" + keys.joined(separator: "/")
        for member in members {
            let key = member.key
            let path = documentPath + "/" + key
            if key.hasPrefix(".") {
                switch key {
                case ".read": read = rule(member.value, kind: .read, captures: captures, path: path)
                case ".write": write = rule(member.value, kind: .write, captures: captures, path: path)
                case ".validate": validate = rule(member.value, kind: .validate, captures: captures, path: path)
                case ".indexOn": indexOn = self.indexOn(member.value, path: path)
                default: errors.append(RulesError(path: path, reason: "unknown rule type '\(key)'"))
                }
                continue
            }
            if let problem = RulesLoader.keyProblem(key) {
                errors.append(RulesError(path: path, reason: problem))
                continue
            }
            if key.hasPrefix("$") {
                if let existing = wildcardName {
                    errors.append(
                        RulesError(path: path, reason: "a node may have only one wildcard child (already has \(existing))"))
                    continue
                }
                if captures.contains(key) {
                    errors.append(RulesError(path: path, reason: "wildcard \(key) is already used on this path"))
                    continue
                }
                wildcardName = key
                wildcard = node(member.value, keys: keys + [key], captures: captures + [key], documentPath: path)
            } else {
                if children[key] != nil {
                    errors.append(RulesError(path: path, reason: "key duplicates a canonically equivalent sibling"))
                    continue
                }
                children[key] = node(member.value, keys: keys + [key], captures: captures, documentPath: path)
            }
        }
        return RuleNode(
            key: keys.last ?? "", rulePath: rulePath, read: read, write: write, validate: validate, indexOn: indexOn, children: children,
            wildcard: wildcard, wildcardName: wildcardName)
    }

    private mutating func rule(_ json: JSONValue, kind: RuleKind, captures: [String], path: String) -> CompiledRule? {
        switch json {
        case .bool(let b): return .constant(b)
        case .string(let source):
            do {
                return .expression(try TypeChecker.compile(source, captures: captures, kind: kind))
            } catch {
                errors.append(error.attached(to: path))
                return nil
            }
        default:
            errors.append(RulesError(path: path, reason: "\(kind.rawValue) must be a boolean or an expression string"))
            return nil
        }
    }

    private mutating func indexOn(_ json: JSONValue, path: String) -> [String] {
        switch json {
        case .string(let s): return [s]
        case .array(let items):
            var keys: [String] = []
            for item in items {
                guard case .string(let s) = item else {
                    errors.append(RulesError(path: path, reason: ".indexOn must be a string or an array of strings"))
                    return []
                }
                keys.append(s)
            }
            return keys
        default:
            errors.append(RulesError(path: path, reason: ".indexOn must be a string or an array of strings"))
            return []
        }
    }

    /// Why `key` cannot name a rules child, or nil if it can.
    static func keyProblem(_ key: String) -> String? {
        if key.isEmpty { return "empty key" }
        if key.utf8.count > 768 { return "key is longer than 768 bytes" }
        for (i, s) in key.unicodeScalars.enumerated() {
            switch s {
            case "$" where i == 0: continue
            case ".", "$", "#", "[", "]", "/": return "key contains '\(Character(s))'"
            case _ where s.value < 0x20 || s.value == 0x7F: return "key contains a control character"
            default: continue
            }
        }
        if key == "$" { return "wildcard needs a name" }
        return nil
    }
}
