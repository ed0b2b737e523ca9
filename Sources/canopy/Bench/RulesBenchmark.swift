// RulesBenchmark -- `canopy bench rules`: evaluations per second of the event ruleset on a realistic read and write.

import CanopyCore
import CanopyRules
import CanopyServer
import Foundation

struct RulesBenchmark {
    var iterations: Int

    func run() throws {
        let source = try readFile(Self.rulesPath())
        let rules = try CompiledRules.compile(source: source)
        // A realistic event: 1,000 users with content, 50 tiers, public content.
        var users: [JSONMember] = []
        for u in 0..<1000 {
            users.append(JSONMember("\(100_000 + u)", ["content": ["item\(u)": ["order": .int(Int64(u)), "title": "t"]]]))
        }
        let tree: JSONValue = [
            "public": ["admin": ["content": ["a": ["order": 1, "title": "hello"]]]],
            "private": [
                "adminable": ["users": .object(users), "tiers": ["101": ["content": ["b": ["order": 2]]]]],
                "admin": ["pendingContent": ["x": ["order": 1, "type": "text"]]],
            ],
        ]
        let data = JSONRuleData(tree)
        let attendee: JSONValue = [
            "uid": "100500", "provider": "custom",
            "token": ["userId": "100500", "tierId": "101", "groups": ["11": true], "ns": "bench"],
        ]
        let admin: JSONValue = ["uid": "admin", "token": ["admin": true]]
        let readPath = ["private", "adminable", "users", "100500", "content"]
        let writePath = ["private", "admin", "pendingContent", "y"]
        let newTree = tree  // the write adds one item; rules evaluate against a tree that holds it
        let newData = JSONRuleData(Self.adding(["order": 2, "type": "text", "title": "new"], at: writePath, to: newTree))
        let now = SystemClock().nowMilliseconds()

        var allowed = 0
        let readStart = monotonicNanoseconds()
        for _ in 0..<iterations {
            if rules.canRead(path: readPath, root: data, auth: attendee, now: now, query: nil).allowed { allowed += 1 }
        }
        let readSeconds = Double(monotonicNanoseconds() - readStart) / 1e9
        let writeStart = monotonicNanoseconds()
        for _ in 0..<iterations {
            if rules.canWrite(path: writePath, oldRoot: data, newRoot: newData, auth: admin, now: now).allowed {
                allowed += 1
            }
        }
        let writeSeconds = Double(monotonicNanoseconds() - writeStart) / 1e9
        guard allowed == 2 * iterations else { throw CommandFailure("the benchmark's operations were not all allowed") }
        print("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores")
        print(
            String(
                format: "rules read  (attendee, own user path):   %10.0f evaluations/s  (%.2f µs each)",
                Double(iterations) / readSeconds, readSeconds / Double(iterations) * 1e6))
        print(
            String(
                format: "rules write (admin, pendingContent item): %10.0f evaluations/s  (%.2f µs each)",
                Double(iterations) / writeSeconds, writeSeconds / Double(iterations) * 1e6))
    }

    static func adding(_ value: JSONValue, at path: [String], to tree: JSONValue) -> JSONValue {
        guard let first = path.first else { return value }
        var members = tree.members ?? []
        if let index = members.firstIndex(where: { $0.key == first }) {
            members[index].value = adding(value, at: Array(path.dropFirst()), to: members[index].value)
        } else {
            members.append(JSONMember(first, adding(value, at: Array(path.dropFirst()), to: .object([]))))
        }
        return .object(members)
    }

    /// `rules/personalized-content.rules.json` next to the working directory or the package root.
    static func rulesPath() -> String {
        let candidates = [
            "rules/personalized-content.rules.json",
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("rules/personalized-content.rules.json").path,
        ]
        return candidates.first { FileManager.default.fileExists(atPath: $0) } ?? candidates[0]
    }
}
