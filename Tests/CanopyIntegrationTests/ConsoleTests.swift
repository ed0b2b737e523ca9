// ConsoleTests -- the organiser console's static files, served by the real daemon at /.canopy/console/ (the page
// itself is driven in a browser by Tests/browser).

import CanopyCore
import CanopyNet
import Foundation
import Testing

@Suite struct ConsoleTests {
    static let files = ["", "index.html", "console.css", "app.js", "api.js", "content.js", "tabs.js", "util.js", "favicon.svg"]

    @Test func everyFileIsServedWithItsTypeAStrictPolicyAndAValidator() throws {
        try withServer { server in
            let client = server.client()
            for name in Self.files {
                // No credential needed, and a bad one changes nothing: the files hold no data.
                let response = try client.request(
                    "GET", "/.canopy/console/\(name)?ns=no-such-event", headers: [("Authorization", "Bearer junk")])
                #expect(response.status == 200, "\(name)")
                let type = response.header("Content-Type") ?? ""
                let expected =
                    name.hasSuffix(".js") ? "text/javascript" : name.hasSuffix(".css") ? "text/css"
                    : name.hasSuffix(".svg") ? "image/svg+xml" : "text/html"
                #expect(type.hasPrefix(expected), "\(name): \(type)")
                let policy = response.header("Content-Security-Policy") ?? ""
                #expect(policy.contains("script-src 'self'") && policy.contains("object-src 'none'"))
                #expect(policy.contains("frame-ancestors 'none'") && !policy.contains("unsafe"))
                #expect(response.header("X-Content-Type-Options") == "nosniff")
                #expect(response.header("Cache-Control") == "no-cache")
                let etag = try #require(response.header("ETag"))
                let again = try client.request("GET", "/.canopy/console/\(name)", headers: [("If-None-Match", etag)])
                #expect(again.status == 304 && again.body.isEmpty)
                let weak = try client.request(
                    "GET", "/.canopy/console/\(name)", headers: [("If-None-Match", "\"other\", W/\(etag)")])
                #expect(weak.status == 304)
                let stale = try client.request("GET", "/.canopy/console/\(name)", headers: [("If-None-Match", "\"x\"")])
                #expect(stale.status == 200 && stale.body == response.body)
            }
        }
    }

    @Test func thePageHasNoInlineScriptAndLoadsOnlyItsOwnFiles() throws {
        try withServer { server in
            let page = try server.client().request("GET", "/.canopy/console/").text
            #expect(page.contains(#"<script type="module" src="app.js"></script>"#))
            // Every <script> has a src; no inline handler attribute (on...=) anywhere.
            for part in page.components(separatedBy: "<script").dropFirst() {
                let tag = part.prefix { $0 != ">" }
                #expect(tag.contains("src="), "inline script: <script\(tag)>")
            }
            #expect(page.range(of: #"\son[a-z]+="#, options: .regularExpression) == nil)
            #expect(!page.contains("http://") && !page.contains("https://"))
            // Each module the page and the scripts import is served.
            for name in Self.files where name.hasSuffix(".js") {
                let script = try server.client().request("GET", "/.canopy/console/\(name)").text
                #expect(!script.contains("innerHTML") && !script.contains("eval("), "\(name)")
                for match in script.matches(of: /from "\.\/([a-z]+\.js)"/) {
                    #expect(Self.files.contains(String(match.1)), "\(name) imports \(match.1)")
                }
            }
        }
    }

    @Test func otherPathsAndMethodsAreRefusedInWords() throws {
        try withServer { server in
            let client = server.client()
            let bare = try client.request("GET", "/.canopy/console")
            #expect(bare.status == 301 && bare.header("Location") == "/.canopy/console/")
            let missing = try client.request("GET", "/.canopy/console/../admin.credential")
            #expect(missing.status == 404)
            #expect(missing.text.contains("\"error\""))
            let put = try client.request("PUT", "/.canopy/console/app.js", body: Array("x".utf8))
            #expect(put.status == 405 && put.header("Allow") == "GET")
            #expect(put.header("Content-Security-Policy") != nil)
        }
    }
}
