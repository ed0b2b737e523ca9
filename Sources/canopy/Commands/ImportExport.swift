// ImportExport -- `canopy import` / `canopy export`: move a namespace in and out as a versioned JSON document.

import CanopyCore
import CanopyServer
import CanopyStore
import Foundation

/// `canopy export`.
struct ExportCommand: Command {
    static let name = "export"
    static let abstract = "Write an event (namespace) as a versioned JSON export document."
    static let usage = "canopy export --ns <event> [--out <file>] [--url <url>] [--token <token>]\n\(RemoteOptions.usage)"
    var remote = RemoteOptions()
    var output: String?

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            if try remote.parse(option, &arguments) { continue }
            guard option == "--out" else { throw .unknownOption(option, command: Self.name) }
            output = try arguments.value(for: option)
        }
        _ = try remote.requireNamespace()
    }

    func run() throws {
        let r = try remote.send("GET", "/.json", query: [("format", "export")])
        let data: Node
        do {
            data = try Node.from(json: try JSONValue.parse(r.body))
        } catch {
            throw CommandFailure("the daemon sent data that is not a valid tree: \(error)")
        }
        let document = ExportDocument(
            namespace: remote.namespace, exportedAt: SystemClock().nowMilliseconds(), data: data)
        if let output {
            try document.serialized().write(toFile: output, atomically: true, encoding: .utf8)
            writeStandardError("canopy: exported \(remote.namespace!) to \(output)\n")
        } else {
            print(document.serialized(), terminator: "")
        }
    }
}

/// `canopy import`.
struct ImportCommand: Command {
    static let name = "import"
    static let abstract = "Load an export document into an event, over HTTP or into a stopped daemon's data dir."
    static let usage = """
        canopy import --ns <event> <file> [--url <url>] [--token <token>]
        canopy import --ns <event> <file> --offline [--data <dir>]
          Replaces the event's data with the document's. --offline writes straight into the SQLite file of a
          stopped daemon's data directory (refused while a daemon holds it).
        \(RemoteOptions.usage)
        """
    var remote = RemoteOptions()
    var file = ""
    var offline = false

    init(parsing arguments: inout Arguments) throws(UsageError) {
        var file: String?
        while !arguments.isEmpty {
            if let positional = arguments.nextPositional() {
                guard file == nil else { throw UsageError(message: "unexpected argument '\(positional)'") }
                file = positional
                continue
            }
            guard let option = try arguments.nextOption() else { break }
            if try remote.parse(option, &arguments) { continue }
            guard option == "--offline" else { throw .unknownOption(option, command: Self.name) }
            offline = true
        }
        _ = try remote.requireNamespace()
        guard let file else { throw UsageError(message: "canopy import needs the export document's file name") }
        self.file = file
    }

    func run() throws {
        let document: ExportDocument
        do {
            document = try ExportDocument.parse(Array(try readFile(file).utf8))
        } catch let error as ExportDocumentError {
            throw CommandFailure("\(file): \(error.message)")
        }
        let namespace = remote.namespace!
        if offline {
            try importOffline(document, into: namespace)
        } else {
            var body: [UInt8] = []
            document.data.json(export: true).write(into: &body)
            _ = try remote.send("PUT", "/.json", query: [("print", "silent")], body: body, accept: [200, 204])
        }
        print("imported \(file) into \(namespace)")
    }

    /// Imports into a data directory that no daemon serves, through the daemon's own write pipeline.
    private func importOffline(_ document: ExportDocument, into namespace: String) throws {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = remote.dataDirectory
        do {
            try Daemon.performOffline(
                .set(path: .root, data: document.data.json(export: true)), on: namespace, configuration: configuration)
        } catch let error as StoreError where error.kind == .directoryInUse {
            throw CommandFailure("\(remote.dataDirectory) is in use by a running daemon: import over HTTP instead")
        } catch let error as any CanopyError {
            throw CommandFailure("import failed, nothing was changed: \(error.userMessage)")
        }
    }
}
