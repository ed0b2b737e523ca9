// ExportDocument -- the versioned JSON document `canopy export` writes and `canopy import` / `serve --demo` read.
//
//   {"canopy": "export", "version": 1, "namespace": "<ns>", "exportedAt": <ms>, "data": <tree in export format>}
//
// `data` keeps priorities (`.priority` / `.value`) and never uses arrays, so an export re-imports exactly.

import CanopyCore

/// A whole namespace as a portable document.
public struct ExportDocument: Sendable {
    public static let format = "export"
    public static let currentVersion: Int64 = 1

    public var namespace: String?
    public var exportedAt: Int64
    public var data: Node

    public init(namespace: String?, exportedAt: Int64, data: Node) {
        self.namespace = namespace
        self.exportedAt = exportedAt
        self.data = data
    }

    /// Reads and validates a document; refuses anything that is not a Canopy export of a known version.
    public static func parse(_ bytes: [UInt8]) throws(ExportDocumentError) -> ExportDocument {
        let json: JSONValue
        do {
            json = try JSONValue.parse(bytes)
        } catch {
            throw ExportDocumentError("Not a Canopy export: \(error.userMessage)")
        }
        guard json["canopy"]?.stringValue == format else {
            throw ExportDocumentError("Not a Canopy export document: the member \"canopy\": \"export\" is missing.")
        }
        guard let version = json["version"]?.int64Value else {
            throw ExportDocumentError("The export document has no integer \"version\".")
        }
        guard version == currentVersion else {
            throw ExportDocumentError("Export format version \(version) is not supported (this Canopy reads version 1).")
        }
        guard let data = json["data"] else { throw ExportDocumentError("The export document has no \"data\" member.") }
        let node: Node
        do {
            node = try Node.from(json: data)
        } catch {
            throw ExportDocumentError("The export document's data is invalid: \(error.userMessage)")
        }
        return ExportDocument(
            namespace: json["namespace"]?.stringValue, exportedAt: json["exportedAt"]?.int64Value ?? 0, data: node)
    }

    /// The document as pretty-printed JSON text.
    public func serialized() -> String {
        var members: [JSONMember] = [JSONMember("canopy", .string(Self.format)), JSONMember("version", .int(Self.currentVersion))]
        if let namespace { members.append(JSONMember("namespace", .string(namespace))) }
        members.append(JSONMember("exportedAt", .int(exportedAt)))
        members.append(JSONMember("data", data.json(export: true)))
        return JSONValue.object(members).serialized(pretty: true) + "\n"
    }
}

/// Why a file is not a Canopy export document that this version can read.
public struct ExportDocumentError: CanopyError {
    public let message: String
    public var code: String { "invalid_export" }
    public var userMessage: String { message }
    public var description: String { "ExportDocumentError: \(message)" }

    init(_ message: String) { self.message = message }
}
