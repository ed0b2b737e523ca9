// FeedTestSupport -- the demo event for feed tests: load and publish it, mint attendee tokens, expected feeds.

import CanopyClient
import CanopyCore
import CanopyNet
import CanopyPublish
import CanopyServer
import Foundation
import Synchronization
import Testing

/// The demo event's namespace, directory and expected feeds (`seed/`).
enum DemoEvent {
    static let namespace = "canopy-demo-summit"

    static func directory() throws -> AttendeeDirectory {
        try AttendeeDirectory.parse(
            try JSONValue.parse(try String(contentsOfFile: seedFile("attendees.json"), encoding: .utf8)))
    }

    /// The keys attendee `id` must see, in order.
    static func expectedFeed(of id: String) throws -> [String] {
        let expected = try JSONValue.parse(try String(contentsOfFile: seedFile("expected-feeds.json"), encoding: .utf8))
        let keys = expected["feeds"]?[id]?.arrayValue?.compactMap(\.stringValue)
        return try #require(keys)
    }

    /// PUTs the demo event into the namespace (and isolates groups when asked), then publishes it.
    static func loadAndPublish(port: Int, admin: String, isolateGroups: Bool = false) throws {
        let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 20)
        let headers = [("Authorization", "Bearer \(admin)")]
        let document = try ExportDocument.parse(
            Array(try String(contentsOfFile: seedFile("canopy-demo-summit.json"), encoding: .utf8).utf8))
        var tree: [UInt8] = []
        document.data.json(export: true).write(into: &tree)
        #expect(try client.request("PUT", "/.json?ns=\(namespace)", headers: headers, body: tree).status == 200)
        if isolateGroups {
            let r = try client.request(
                "PUT", "/private/admin/settings/isolateGroups.json?ns=\(namespace)", headers: headers,
                body: Array("true".utf8))
            #expect(r.status == 200)
        }
        try publish(port: port, admin: admin)
    }

    /// Publishes the pending content.
    static func publish(port: Int, admin: String) throws {
        let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 20)
        let r = try client.request(
            "POST", "/.canopy/publish?ns=\(namespace)", headers: [("Authorization", "Bearer \(admin)")])
        #expect(r.status == 200)
    }

    /// Adds a draft item (admin REST write).
    static func addPending(port: Int, admin: String, key: String, item: JSONValue) throws {
        let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 20)
        let r = try client.request(
            "PUT", "/private/admin/pendingContent/\(key).json?ns=\(namespace)",
            headers: [("Authorization", "Bearer \(admin)")],
            body: Array(item.serialized().utf8))
        #expect(r.status == 200)
    }

    /// A token for `attendee` with the claims `canopy token mint --attendee` writes.
    static func token(for attendee: Attendee, credentials: Credentials) throws -> String {
        var claims = attendee.claims(namespace: namespace).members ?? []
        claims.append(JSONMember("uid", .string(attendee.id)))
        return try credentials.mint(claims: .object(claims), ttlSeconds: 3600, now: SystemClock().nowMilliseconds())
    }

    /// The credentials of a daemon's data directory (to mint tokens for a spawned daemon).
    static func credentials(dataDirectory: String) throws -> Credentials {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = dataDirectory
        return try Credentials(configuration: configuration)
    }
}

