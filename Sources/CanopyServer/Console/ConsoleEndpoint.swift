// ConsoleEndpoint -- serves the organiser's console at `/.canopy/console/` (GET, no credential: the
// page holds no data; it asks for the credential and then calls the APIs with it).
//
//   GET /.canopy/console            301 to /.canopy/console/
//   GET /.canopy/console/<file>     the file (ConsoleAssets), `ETag` + `Cache-Control: no-cache`; 304 on a match
//
// Every answer carries a Content-Security-Policy that allows only the console's own scripts and styles (no inline
// script, no eval, no plugins, no framing) and lets it connect only to this origin.

import CanopyNet

enum ConsoleEndpoint {
    static let prefix = "/.canopy/console"

    /// The policy: scripts, styles and connections from this origin only; `html` items are previewed in a
    /// sandboxed `srcdoc` frame (which inherits this policy, so their scripts never run); images from anywhere
    /// (an item may show one), never plugins, never framed by another page.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https: http:; "
        + "connect-src 'self'; frame-src 'self'; child-src 'self'; object-src 'none'; base-uri 'none'; "
        + "form-action 'none'; frame-ancestors 'none'"

    static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
    ]

    /// Whether `path` is the console's.
    static func handles(_ path: String) -> Bool {
        path == prefix || path.hasPrefix(prefix + "/")
    }

    /// The answer to `request` (whose path `handles`).
    static func response(to request: HTTPRequest) -> HTTPResponse {
        guard request.method == "GET" else {
            return page(405, "Method \(request.method) is not allowed here; use GET.", extra: [("Allow", "GET")])
        }
        if request.path == prefix {
            return HTTPResponse(
                status: 301, headers: securityHeaders + [("Location", prefix + "/"), ("Content-Type", "text/plain")],
                body: Array("Moved to \(prefix)/\n".utf8))
        }
        let name = String(request.path.dropFirst(prefix.count + 1))
        guard let asset = ConsoleAssets.files[name] else {
            return page(404, "The console has no file '\(name)'.")
        }
        let headers =
            securityHeaders + [
                ("Content-Type", asset.contentType), ("ETag", asset.etag), ("Cache-Control", "no-cache"),
            ]
        if let tags = request.header("if-none-match"), matches(tags, asset.etag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        return HTTPResponse(status: 200, headers: headers, body: asset.body)
    }

    /// Whether an `If-None-Match` list names `etag` (or is `*`); weak comparison, as RFC 9110 says for GET.
    static func matches(_ list: String, _ etag: String) -> Bool {
        for raw in list.split(separator: ",") {
            var tag = raw.trimmingSpaces()
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag = String(tag.dropFirst(2)) }
            if tag == etag { return true }
        }
        return false
    }

    private static func page(_ status: Int, _ message: String, extra: [(String, String)] = []) -> HTTPResponse {
        var response = HTTPResponse.error(status: status, message: message)
        response.headers += securityHeaders + extra
        return response
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
