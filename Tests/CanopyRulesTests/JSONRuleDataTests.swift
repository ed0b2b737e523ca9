// JSONRuleDataTests -- the JSON-backed RuleDataTree: plain and export format, pruning, arrays.
import CanopyCore
import Testing

@testable import CanopyRules

@Suite struct JSONRuleDataTests {
    let tree = JSONRuleData([
        "a": ["b": 1, "c": ["d": "x"], "empty": [:], "gone": nil],
        "leaf": [".value": true, ".priority": 3],
        "list": ["p", "q"],
        "prio": [".priority": "high", "k": 1],
    ])

    @Test func primitivesAndExistence() {
        #expect(tree.primitive(at: ["a", "b"]) == 1)
        #expect(tree.primitive(at: ["a"]) == nil)
        #expect(tree.exists(at: ["a"]))
        #expect(tree.exists(at: []))
        #expect(!tree.exists(at: ["a", "empty"]))
        #expect(!tree.exists(at: ["a", "gone"]))
        #expect(!tree.exists(at: ["a", "b", "deeper"]))
        #expect(!tree.exists(at: ["nope"]))
    }

    @Test func exportFormat() {
        #expect(tree.primitive(at: ["leaf"]) == true)
        #expect(tree.priority(at: ["leaf"]) == 3)
        #expect(tree.priority(at: ["prio"]) == "high")
        #expect(tree.childKeys(at: ["prio"]) == ["k"])
        #expect(!tree.hasChildren(at: ["leaf"]))
    }

    @Test func arraysAreKeyedByIndex() {
        #expect(tree.primitive(at: ["list", "1"]) == "q")
        #expect(Set(tree.childKeys(at: ["list"])) == ["0", "1"])
    }

    @Test func childKeysAndHasChildren() {
        #expect(Set(tree.childKeys(at: ["a"])) == ["b", "c"])
        #expect(tree.hasChildren(at: ["a", "c"]))
        #expect(tree.childKeys(at: ["nope"]).isEmpty)
        #expect(!JSONRuleData.empty.exists(at: []))
    }

    @Test func keysCompareByExactBytes() {
        let composed = JSONRuleData(["\u{E9}": 1])
        #expect(composed.exists(at: ["\u{E9}"]))
        #expect(!composed.exists(at: ["e\u{301}"]))
    }
}
