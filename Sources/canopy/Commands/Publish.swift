// Publish -- `canopy publish|unpublish|revert|rollback|status|preview`: drive a running daemon's publish engine.

import CanopyCore
import CanopyNet
import Foundation

/// `canopy publish`.
struct PublishCommand: Command {
    static let name = "publish"
    static let abstract = "Publish an event's pendingContent (or one item) atomically."
    static let usage = """
        canopy publish --ns <event> [--item <key>] [--if-match <etag>] [--require-complete] [--dry-run [--directory <file>]]
                       [--url <url>] [--token <token>]
        \(RemoteOptions.usage)
          --item       publish only this item's pending state
          --if-match   publish only if pendingContent still has this ETag (from `canopy status`)
          --require-complete  publish nothing if an item misses what its type needs (`canopy status` lists them)
          --dry-run    show what would change per location; with --directory, which attendees gain or lose items
        """
    var remote = RemoteOptions()
    var item: String?
    var ifMatch: String?
    var requireComplete = false
    var dryRun = false
    var directory: String?

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            if try remote.parse(option, &arguments) { continue }
            switch option {
            case "--item": item = try arguments.value(for: option)
            case "--if-match": ifMatch = try arguments.value(for: option)
            case "--require-complete": requireComplete = true
            case "--dry-run": dryRun = true
            case "--directory": directory = try arguments.value(for: option)
            default: throw .unknownOption(option, command: Self.name)
            }
        }
        _ = try remote.requireNamespace()
        if directory != nil && !dryRun { throw UsageError(message: "--directory goes with --dry-run") }
    }

    func run() throws {
        if dryRun {
            let body = try directory.map { Array(try readFile($0).utf8) } ?? []
            let r = try remote.send("POST", "/.canopy/dry-run", body: body)
            print(try JSONValue.parse(r.body).serialized(pretty: true))
            return
        }
        var query: [(String, String)] = []
        if let item { query.append(("item", item)) }
        if requireComplete { query.append(("complete", "required")) }
        let headers = ifMatch.map { [("if-match", $0)] } ?? []
        let r = try remote.send("POST", "/.canopy/publish", query: query, headers: headers, accept: [200, 412])
        if r.status == 412 {
            throw CommandFailure(
                "pendingContent changed since you reviewed it (current ETag \(r.header("etag") ?? "?")); nothing was published")
        }
        let result = try JSONValue.parse(r.body)
        let changed = result["changedLocations"]?.arrayValue?.compactMap(\.stringValue) ?? []
        print("published \(remote.namespace!) at \(result["lastPublishedAt"]?.serialized() ?? "?"); \(changed.count) location(s) changed")
        for path in changed { print("  \(path)") }
    }
}

/// `canopy unpublish`.
struct UnpublishCommand: Command {
    static let name = "unpublish"
    static let abstract = "Remove one published item from an event everywhere."
    static let usage = "canopy unpublish --ns <event> --item <key> [--url <url>] [--token <token>]\n\(RemoteOptions.usage)"
    var remote = RemoteOptions()
    var item = ""

    init(parsing arguments: inout Arguments) throws(UsageError) {
        var item: String?
        while let option = try arguments.nextOption() {
            if try remote.parse(option, &arguments) { continue }
            guard option == "--item" else { throw .unknownOption(option, command: Self.name) }
            item = try arguments.value(for: option)
        }
        _ = try remote.requireNamespace()
        guard let item else { throw .missingOption("--item") }
        self.item = item
    }

    func run() throws {
        let r = try remote.send("POST", "/.canopy/unpublish", query: [("item", item)])
        let changed = (try JSONValue.parse(r.body))["changedLocations"]?.arrayValue?.count ?? 0
        print("unpublished \(item) from \(remote.namespace!); \(changed) location(s) changed")
    }
}

/// `canopy revert`.
struct RevertCommand: Command {
    static let name = "revert"
    static let abstract = "Throw away unpublished edits: pendingContent becomes the published content."
    static let usage = "canopy revert --ns <event> [--url <url>] [--token <token>]\n\(RemoteOptions.usage)"
    var remote = RemoteOptions()

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            if try remote.parse(option, &arguments) { continue }
            throw .unknownOption(option, command: Self.name)
        }
        _ = try remote.requireNamespace()
    }

    func run() throws {
        _ = try remote.send("POST", "/.canopy/revert")
        print("reverted \(remote.namespace!): pendingContent is the published content again")
    }
}

/// `canopy rollback`.
struct RollbackCommand: Command {
    static let name = "rollback"
    static let abstract = "Republish an earlier published version (see `canopy status` for history ids)."
    static let usage = "canopy rollback --ns <event> --to <history id> [--url <url>] [--token <token>]\n\(RemoteOptions.usage)"
    var remote = RemoteOptions()
    var target = ""

    init(parsing arguments: inout Arguments) throws(UsageError) {
        var target: String?
        while let option = try arguments.nextOption() {
            if try remote.parse(option, &arguments) { continue }
            guard option == "--to" else { throw .unknownOption(option, command: Self.name) }
            target = try arguments.value(for: option)
        }
        _ = try remote.requireNamespace()
        guard let target else { throw .missingOption("--to") }
        self.target = target
    }

    func run() throws {
        _ = try remote.send("POST", "/.canopy/rollback", query: [("to", target)])
        print("rolled \(remote.namespace!) back to \(target)")
    }
}

/// `canopy status`.
struct StatusCommand: Command {
    static let name = "status"
    static let abstract = "Show pending vs published content of an event, item by item."
    static let usage = "canopy status --ns <event> [--json] [--url <url>] [--token <token>]\n\(RemoteOptions.usage)"
    var remote = RemoteOptions()
    var json = false

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            if try remote.parse(option, &arguments) { continue }
            guard option == "--json" else { throw .unknownOption(option, command: Self.name) }
            json = true
        }
        _ = try remote.requireNamespace()
    }

    func run() throws {
        let r = try remote.send("GET", "/.canopy/status")
        let status = try JSONValue.parse(r.body)
        if json {
            print(status.serialized(pretty: true))
            return
        }
        print("event \(remote.namespace!)  (pendingContent ETag: \(r.header("etag") ?? "-"))")
        print(status.serialized(pretty: true))
    }
}

/// `canopy preview`.
struct PreviewCommand: Command {
    static let name = "preview"
    static let abstract = "Show the merged, ordered feed one attendee sees (published, or with --pending)."
    static let usage = """
        canopy preview --ns <event> --attendee <id> --directory <file> [--pending] [--url <url>] [--token <token>]
        \(RemoteOptions.usage)
        """
    var remote = RemoteOptions()
    var attendee = ""
    var directory = ""
    var pending = false

    init(parsing arguments: inout Arguments) throws(UsageError) {
        var attendee: String?
        var directory: String?
        while let option = try arguments.nextOption() {
            if try remote.parse(option, &arguments) { continue }
            switch option {
            case "--attendee": attendee = try arguments.value(for: option)
            case "--directory": directory = try arguments.value(for: option)
            case "--pending": pending = true
            default: throw .unknownOption(option, command: Self.name)
            }
        }
        _ = try remote.requireNamespace()
        guard let attendee else { throw .missingOption("--attendee") }
        guard let directory else { throw .missingOption("--directory") }
        self.attendee = attendee
        self.directory = directory
    }

    func run() throws {
        var query = [("attendee", attendee)]
        if pending { query.append(("pending", "true")) }
        let r = try remote.send("POST", "/.canopy/preview", query: query, body: Array(try readFile(directory).utf8))
        let feed = (try JSONValue.parse(r.body))["feed"]?.arrayValue ?? []
        print("feed of attendee \(attendee) in \(remote.namespace!)\(pending ? " (pending)" : ""): \(feed.count) item(s)")
        for entry in feed {
            let item = entry["item"] ?? .null
            let order = item["order"]?.serialized() ?? "?"
            let title = item["title"]?.stringValue ?? item["type"]?.stringValue ?? ""
            print("  [\(order)] \(entry["key"]?.stringValue ?? "")  \(title)")
        }
    }
}
