// StoreMutationTests -- turning an export-format value into the rows that replace a subtree.
import CanopyCore
import Testing

@testable import CanopyStore

@Suite struct StoreMutationTests {
    private func describe(_ mutations: [StoreMutation]) -> [String] {
        mutations.map { mutation in
            let path = "/" + mutation.path.joined(separator: "/")
            switch mutation {
            case .deleteSubtree: return "delete " + path
            case .deleteRow: return "delete row " + path
            case .putLeaf(_, let value, let priority):
                return "leaf \(path)=\(text(value))" + (priority.map { "^" + text($0) } ?? "")
            case .putPriority(_, let priority): return "priority \(path)^\(text(priority))"
            }
        }
    }

    @Test func nullAndEmptyObjectsOnlyDelete() {
        #expect(describe(StoreMutation.replacingSubtree(at: ["a"], with: .null)) == ["delete /a"])
        #expect(describe(StoreMutation.replacingSubtree(at: ["a"], with: .object([]))) == ["delete /a"])
        #expect(describe(StoreMutation.replacingSubtree(at: [], with: .array([.null]))) == ["delete /"])
    }

    @Test func nestedValuesBecomeLeavesAndPriorities() {
        let value: JSONValue = .object([
            JSONMember("list", .array([.int(1), .object([JSONMember("x", .bool(false))])])),
            JSONMember("p", .object([JSONMember(".value", .double(0.5)), JSONMember(".priority", .string("q"))])),
            JSONMember(".priority", .int(9)),
            JSONMember("nullPriority", .object([JSONMember(".priority", .null), JSONMember("y", .string("z"))])),
        ])
        #expect(
            describe(StoreMutation.replacingSubtree(at: ["r"], with: value)) == [
                "delete /r", "leaf /r/list/0=1", "leaf /r/list/1/x=false", "leaf /r/p=0.5^\"q\"",
                "leaf /r/nullPriority/y=\"z\"", "priority /r^9",
            ])
    }
}
