// ConsoleAssets -- the organiser's console (`/.canopy/console/`): its files, compiled into the binary.
//
// The page is static HTML, CSS and JavaScript written for Canopy. The files live in Console/Assets (edit them
// there); embed-assets.py copies them into ConsoleAssets+Files.swift as string literals, so the installed binary
// serves them with nothing next to it, no CDN and no third-party code. The page talks to the daemon only through
// the public APIs (REST, SSE, `/.canopy/*`): everything it does is also scriptable.
// Architecture.md#The-organiser-console has the design.

import CanopyCore

/// One file of the console.
struct ConsoleAsset: Sendable {
    /// The file's `Content-Type`.
    let contentType: String
    /// The file's bytes.
    let body: [UInt8]
    /// A strong validator: a SHA-256 prefix of the body, quoted.
    let etag: String

    init(_ contentType: String, _ text: String) {
        self.contentType = contentType
        self.body = Array(text.utf8)
        self.etag = "\"" + String(Hash.sha256Hex(body).prefix(32)) + "\""
    }
}

/// The console's files by name (the path below `/.canopy/console/`; "" is the page itself).
enum ConsoleAssets {
    static let html = "text/html; charset=utf-8"
    static let javascript = "text/javascript; charset=utf-8"
    static let css = "text/css; charset=utf-8"
    static let svg = "image/svg+xml"

    static let files: [String: ConsoleAsset] = {
        var files: [String: ConsoleAsset] = [:]
        for source in sources { files[source.name] = ConsoleAsset(source.contentType, source.text) }
        files[""] = files["index.html"]
        return files
    }()
}
