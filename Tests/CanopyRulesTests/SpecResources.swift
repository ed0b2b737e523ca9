// SpecResources -- loads the JSON spec files under Resources/ for table-driven tests.
import CanopyCore
import Foundation
import Testing

/// One named case from a spec file, with the JSON object that describes it.
struct SpecCase: CustomTestStringConvertible, Sendable {
    var name: String
    var json: JSONValue
    var testDescription: String { name }

    subscript(key: String) -> JSONValue? { json[key] }
}

enum SpecResources {
    /// The raw text of `Resources/<name>.json`.
    static func text(_ name: String) -> String {
        guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Resources"),
            let data = try? Data(contentsOf: url)
        else { fatalError("missing spec resource \(name).json") }
        return String(decoding: data, as: UTF8.self)
    }

    /// The `cases` array of `Resources/<name>.json`.
    static func cases(_ name: String) -> [SpecCase] {
        guard let document = try? JSONValue.parse(text(name)), let items = document["cases"]?.arrayValue else {
            fatalError("spec resource \(name).json is not {\"cases\": [...]}")
        }
        return items.map { SpecCase(name: $0["name"]?.stringValue ?? "?", json: $0) }
    }

    /// A file of the repository (for `rules/*.rules.json`), found relative to this source file.
    static func repositoryFile(_ relativePath: String) -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        guard let data = try? Data(contentsOf: root.appendingPathComponent(relativePath)) else {
            fatalError("missing repository file \(relativePath)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
