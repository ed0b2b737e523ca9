// ConsoleAssets -- the organiser's console (`/.canopy/console/`): its files, compiled into the binary.
//
// The page is static HTML, CSS and JavaScript written for Canopy. The files live in Console/Assets (edit them
// there); SwiftPM compiles them in as byte arrays (`.embedInCode`, `PackageResources`), so the installed binary
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

    init(_ contentType: String, _ body: [UInt8]) {
        self.contentType = contentType
        self.body = body
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
        let sources: [(name: String, contentType: String, body: [UInt8])] = [
            ("index.html", html, PackageResources.index_html),
            ("console.css", css, PackageResources.console_css),
            ("api.js", javascript, PackageResources.api_js),
            ("app.js", javascript, PackageResources.app_js),
            ("content.js", javascript, PackageResources.content_js),
            ("tabs.js", javascript, PackageResources.tabs_js),
            ("util.js", javascript, PackageResources.util_js),
            ("favicon.svg", svg, PackageResources.favicon_svg),
        ]
        var files: [String: ConsoleAsset] = [:]
        for source in sources { files[source.name] = ConsoleAsset(source.contentType, source.body) }
        files[""] = files["index.html"]
        return files
    }()
}
