// ConsoleAPITests -- the endpoints the organiser's console uses (issue 16), through the real `canopy serve --demo`
// binary on a real socket, with tokens minted by the real `canopy token mint`: sign-in and the events a credential
// administers, the stored attendee directory, CSV import, completeness before publish, publish history and
// rollback, rules errors with their line and column; and an attendee token refused by every one of them.

import CanopyCore
import CanopyNet
import Foundation
import Testing

@Suite struct ConsoleAPITests {
    static let ns = "canopy-demo-summit"

    /// A running demo daemon, its admin credential and tokens minted for it.
    struct Demo {
        let server: ServerProcess
        let client: HTTPClient
        let adminToken: String
        let attendeeToken: String

        var admin: [(String, String)] { [("Authorization", "Bearer \(server.admin)")] }

        func call(
            _ method: String, _ action: String, _ body: String? = nil, as headers: [(String, String)]? = nil,
            extra: [(String, String)] = []
        ) throws -> (status: Int, json: JSONValue?, response: HTTPClientResponse) {
            try client.json(method, action, body, headers: (headers ?? admin) + extra)
        }
    }

    func withDemo(_ body: (Demo) throws -> Void) throws {
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ServerProcess(dataDirectory: dir, extraArguments: ["--demo"])
        defer { server.terminate() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 20)
        // The demo event is loaded on the daemon's loop after it reports its port.
        let deadline = Date().addingTimeInterval(20)
        while try client.json("GET", "/.canopy/status?ns=\(Self.ns)", headers: [("Authorization", "Bearer \(server.admin)")]).status != 200,
            Date() < deadline
        {
            Thread.sleep(forTimeInterval: 0.02)
        }
        func mint(_ arguments: [String]) throws -> String {
            let r = try runCanopy(["token", "mint", "--data", dir, "--ttl", "1h"] + arguments)
            #expect(r.status == 0, "\(r.stderr)")
            return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let adminToken = try mint(["--admin", "--ns", Self.ns])
        let attendeeToken = try mint(["--attendee", "100201", "--directory", seedFile("attendees.json")])
        try body(Demo(server: server, client: client, adminToken: adminToken, attendeeToken: attendeeToken))
    }

    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    @Test func signInAndTheEventsACredentialAdministers() throws {
        try withDemo { demo in
            let ns = Self.ns
            var r = try demo.call("GET", "/.canopy/whoami?ns=\(ns)")
            #expect(r.status == 200)
            #expect(r.json?["admin"] == true)
            #expect(r.json?["operator"] == true)
            #expect(r.json?["rules"] == true)
            r = try demo.call("GET", "/.canopy/whoami?ns=\(ns)", as: Self.bearer(demo.adminToken))
            #expect(r.status == 200)
            #expect(r.json?["admin"] == true)
            #expect(r.json?["operator"] == false)
            #expect(r.json?["rules"] == false)

            // A second event the organiser's token (minted for the demo event) does not administer.
            #expect(try demo.call("PUT", "/x.json?ns=other-event", "1").status == 200)
            r = try demo.call("GET", "/.canopy/namespaces")
            #expect(r.json == ["namespaces": ["canopy-demo-summit", "other-event"]])
            r = try demo.call("GET", "/.canopy/namespaces", as: Self.bearer(demo.adminToken))
            #expect(r.status == 200)
            #expect(r.json == ["namespaces": ["canopy-demo-summit"]])
            #expect(try demo.call("GET", "/.canopy/whoami?ns=other-event", as: Self.bearer(demo.adminToken)).status == 401)

            r = try demo.call("GET", "/.canopy/namespaces", as: Self.bearer(demo.attendeeToken))
            #expect(r.status == 403)
            #expect(r.json?["error"]?.stringValue?.contains("not an event administrator") == true)
            #expect(try demo.call("GET", "/.canopy/namespaces", as: []).status == 401)
            #expect(try demo.call("GET", "/.canopy/namespaces", as: Self.bearer("not-a-token")).status == 401)
        }
    }

    @Test func anAttendeeTokenGetsNothingFromTheConsoleEndpoints() throws {
        try withDemo { demo in
            let ns = Self.ns
            let attendee = Self.bearer(demo.attendeeToken)
            let calls: [(String, String, String?)] = [
                ("GET", "/.canopy/whoami?ns=\(ns)", nil), ("GET", "/.canopy/status?ns=\(ns)", nil),
                ("GET", "/.canopy/directory?ns=\(ns)", nil), ("PUT", "/.canopy/directory?ns=\(ns)", "id\n1\n"),
                ("DELETE", "/.canopy/directory?ns=\(ns)", nil), ("GET", "/.canopy/history?ns=\(ns)", nil),
                ("POST", "/.canopy/import-csv?ns=\(ns)&type=text&title=T", "email,description\na@b,x\n"),
                ("POST", "/.canopy/dry-run?ns=\(ns)", nil), ("GET", "/.canopy/preview?ns=\(ns)&attendee=100201", nil),
                ("POST", "/.canopy/publish?ns=\(ns)", nil), ("POST", "/.canopy/rollback?ns=\(ns)&to=x", nil),
                ("GET", "/.settings/rules.json?ns=\(ns)", nil), ("PUT", "/.settings/rules.json?ns=\(ns)", "{\"rules\":{}}"),
                ("GET", "/private/admin/directory.json?ns=\(ns)", nil),
            ]
            for (method, target, body) in calls {
                let r = try demo.call(method, target, body, as: attendee)
                #expect([401, 403].contains(r.status), "\(method) \(target) answered \(r.status)")
                #expect(r.json?["error"]?.stringValue != nil, "\(method) \(target) says why")
            }
            // Nothing changed: the directory is still the demo's.
            #expect(try demo.call("GET", "/.canopy/directory?ns=\(ns)").json?["total"] == 12)
        }
    }

    @Test func theDirectoryIsStoredWithTheEventAndUsedByDryRunsAndPreviews() throws {
        try withDemo { demo in
            let ns = Self.ns
            // `--demo` stores seed/attendees.json with the event.
            var r = try demo.call("GET", "/.canopy/directory?ns=\(ns)")
            #expect(r.status == 200)
            #expect(r.json?["total"] == 12)
            #expect(r.json?["tiers"]?[1] == ["id": "101", "name": "VIP", "count": 3])
            #expect(r.json?["groups"]?[0] == ["id": "11", "name": "Engineering Track", "count": 3])
            #expect(r.json?["attendees"]?[0]?["email"] == "ada.quillfeather@example.com")

            // A dry run without a body lists who gains what from the stored directory.
            r = try demo.call("POST", "/.canopy/dry-run?ns=\(ns)")
            let gains = r.json?["attendees"]?.arrayValue?.first { $0["id"] == "100204" }?["gains"]
            #expect(gains?.arrayValue?.contains("-OKzIpCw8u33iOJJfsuf") == true, "tier 101 gains the VIP item")
            #expect(r.json?["incomplete"] == [])
            r = try demo.call("GET", "/.canopy/preview?ns=\(ns)&attendee=100204&pending=true")
            #expect(r.status == 200)
            #expect(r.json?["feed"]?.arrayValue?.contains { $0["key"] == "-OKzIpCw8u33iOJJfsuf" } == true)

            // Replaced by a CSV directory (quoted names, groups separated by ';').
            let csv = "id,email,name,tier,groups\r\n7,g@example.com,\"Doe, Jane\",101,11;12\r\n8,h@example.com,Hal,,\r\n"
            r = try demo.call("PUT", "/.canopy/directory?ns=\(ns)", csv, extra: [("Content-Type", "text/csv")])
            #expect(r.status == 200)
            #expect(r.json?["attendees"] == 2)
            #expect(r.json?["tiers"] == [["id": "101", "count": 1], ["id": "default", "count": 1]])
            r = try demo.call("GET", "/.canopy/directory?ns=\(ns)")
            #expect(r.json?["attendees"]?[0] == ["id": "7", "tierId": "101", "groupIds": ["11", "12"], "email": "g@example.com", "name": "Doe, Jane"])
            #expect(try demo.call("GET", "/.canopy/preview?ns=\(ns)&attendee=100204").status == 404)

            // Bad uploads change nothing.
            r = try demo.call("PUT", "/.canopy/directory?ns=\(ns)", "id,email\n1,a@b\n1,c@d\n")
            #expect(r.status == 400)
            #expect(r.json?["error"]?.stringValue?.contains("row 3") == true)
            r = try demo.call("PUT", "/.canopy/directory?ns=\(ns)", #"{"attendees":[{"id":"a/b"}]}"#)
            #expect(r.status == 400)
            #expect(r.json?["error"]?.stringValue?.contains("attendees/0/id") == true)
            #expect(try demo.call("PUT", "/.canopy/directory?ns=\(ns)", "").status == 400)
            #expect(try demo.call("GET", "/.canopy/directory?ns=\(ns)").json?["total"] == 2)

            // Removed: previews then need a body.
            #expect(try demo.call("DELETE", "/.canopy/directory?ns=\(ns)").status == 200)
            #expect(try demo.call("GET", "/.canopy/directory?ns=\(ns)").status == 404)
            #expect(try demo.call("GET", "/.canopy/preview?ns=\(ns)&attendee=7").status == 400)
            #expect(try demo.call("POST", "/.canopy/dry-run?ns=\(ns)").json?["attendees"] == nil)
        }
    }

    @Test func aCSVImportCreatesOnePersonalItemAndReportsTheRejectedRows() throws {
        try withDemo { demo in
            let ns = Self.ns
            let csv = """
                email,description,url
                ada.quillfeather@example.com,Your slides,https://example.com/a
                nobody@example.com,x,https://example.com/b
                CLEO.marchbank@example.com,,https://example.com/c
                ,,
                bram.ostrander@example.com,no url,
                ada.quillfeather@example.com,again,https://example.com/d

                """
            let target = "/.canopy/import-csv?ns=\(ns)&type=web&title=Your%20slides"
            var r = try demo.call("POST", target + "&check=true", csv)
            #expect(r.status == 200)
            #expect(r.json?["key"] == nil)
            #expect(try demo.call("GET", "/.canopy/status?ns=\(ns)").json?["items"]?.arrayValue?.count == 9)

            r = try demo.call("POST", target + "&key=slides", csv)
            #expect(r.status == 200)
            #expect(r.json?["key"] == "slides")
            #expect(r.json?["imported"] == 2)
            #expect(r.json?["total"] == 6)
            #expect(
                r.json?["rejected"] == [
                    ["row": 3, "value": "nobody@example.com", "error": "not in the directory"],
                    ["row": 5, "value": "", "error": "empty email or id"],
                    ["row": 6, "value": "bram.ostrander@example.com", "error": "missing url"],
                    ["row": 7, "value": "ada.quillfeather@example.com", "error": "duplicate attendee"],
                ])
            r = try demo.call("GET", "/private/admin/pendingContent/slides.json?ns=\(ns)")
            #expect(r.json?["type"] == "webCSV")
            #expect(r.json?["order"] == 9)
            #expect(r.json?["rawData"]?[1]?["attendeeIds"] == ["100203"])
            #expect(r.json?["rawData"]?[0]?["url"] == "https://example.com/a")

            // Published, each row reaches only the attendee it names.
            #expect(try demo.call("POST", "/.canopy/publish?ns=\(ns)").status == 200)
            let attendee = Self.bearer(demo.attendeeToken)
            r = try demo.call("GET", "/private/adminable/users/100201/content/slides0.json?ns=\(ns)", as: attendee)
            #expect(r.status == 200)
            #expect(r.json?["url"] == "https://example.com/a")
            #expect(r.json?["description"] == "Your slides")
            r = try demo.call("GET", "/private/adminable/users/100203/content/slides1.json?ns=\(ns)")
            #expect(r.json?["url"] == "https://example.com/c")

            // Refused imports write nothing.
            r = try demo.call("POST", "/.canopy/import-csv?ns=\(ns)&type=text&title=T&key=none", "email,description\nnobody@x,hi\n")
            #expect(r.status == 400)
            #expect(r.json?["imported"] == 0)
            #expect(r.json?["rejected"]?[0]?["row"] == 2)
            #expect(try demo.call("POST", "/.canopy/import-csv?ns=\(ns)&type=html&title=T", csv).status == 400)
            #expect(try demo.call("POST", "/.canopy/import-csv?ns=\(ns)&type=web", csv).status == 400)
            #expect(try demo.call("POST", "/.canopy/import-csv?ns=\(ns)&type=web&title=T", "email,description\na,b\n").status == 400)
            #expect(try demo.call("POST", "/.canopy/import-csv?ns=\(ns)&type=text&title=T", "email,description\n\"a,b\n").status == 400)
            #expect(try demo.call("GET", "/private/admin/pendingContent/none.json?ns=\(ns)").json == .null)
        }
    }

    @Test func incompleteItemsAreReportedAndNotPublishedWhenCompletenessIsRequired() throws {
        try withDemo { demo in
            let ns = Self.ns
            #expect(try demo.call("PUT", "/private/admin/pendingContent/v.json?ns=\(ns)", #"{"order":30,"type":"video","title":"Replay"}"#).status == 200)
            #expect(try demo.call("PUT", "/private/admin/pendingContent/s.json?ns=\(ns)", #"{"order":31,"type":"survey","title":" "}"#).status == 200)
            var r = try demo.call("GET", "/.canopy/status?ns=\(ns)")
            #expect(r.json?["counts"]?["incomplete"] == 2)
            let items = r.json?["items"]?.arrayValue ?? []
            #expect(items.first { $0["key"] == "v" }?["missing"] == ["url"])
            #expect(items.first { $0["key"] == "s" }?["missing"] == ["title"])
            #expect(items.first { $0["key"] == "-OKzIpCw8u33iOJJfsuf" }?["missing"] == nil)

            #expect(try demo.call("POST", "/.canopy/publish?ns=\(ns)&complete=sometimes").status == 400)
            r = try demo.call("POST", "/.canopy/publish?ns=\(ns)&complete=required")
            #expect(r.status == 400)
            #expect(r.json?["incomplete"] == [["key": "s", "title": " ", "missing": ["title"]], ["key": "v", "title": "Replay", "missing": ["url"]]])
            #expect(r.json?["error"]?.stringValue?.contains("'Replay' needs url") == true)
            #expect(try demo.call("GET", "/private/admin/lastPublishedAt.json?ns=\(ns)").json == .null)
            #expect(try demo.call("POST", "/.canopy/publish?ns=\(ns)&item=v&complete=required").status == 400)
            // An invalid item is reported as invalid, before what it misses.
            #expect(try demo.call("PUT", "/private/admin/pendingContent/bad.json?ns=\(ns)", #"{"order":"soon","type":"web"}"#).status == 200)
            r = try demo.call("POST", "/.canopy/publish?ns=\(ns)")
            #expect(r.status == 400)
            #expect(r.json?["error"]?.stringValue?.contains("non-numeric 'order'") == true)
            #expect(r.json?["incomplete"] == nil)
            #expect(try demo.call("DELETE", "/private/admin/pendingContent/bad.json?ns=\(ns)").status == 200)

            // One complete item can be published while others are not.
            #expect(try demo.call("POST", "/.canopy/publish?ns=\(ns)&item=-OKzIpCw8u33iOJJfsuf&complete=required").status == 200)
            #expect(try demo.call("PATCH", "/private/admin/pendingContent.json?ns=\(ns)", #"{"v/url":"https://example.com/v","s/title":"Feedback"}"#).status == 200)
            r = try demo.call("GET", "/.canopy/status?ns=\(ns)")
            #expect(r.json?["counts"]?["incomplete"] == 0)
            #expect(try demo.call("POST", "/.canopy/publish?ns=\(ns)").status == 200)
            // Not asked to, a publish takes items as they are, as scripts always could.
            #expect(try demo.call("PUT", "/private/admin/pendingContent/w.json?ns=\(ns)", #"{"order":32,"type":"web","title":"Map"}"#).status == 200)
            #expect(try demo.call("POST", "/.canopy/publish?ns=\(ns)").status == 200)
            #expect(try demo.call("GET", "/private/admin/content/w/title.json?ns=\(ns)").json == "Map")
        }
    }

    @Test func theHistoryListsTheLastTwentyPublishesForRollback() throws {
        try withDemo { demo in
            let ns = Self.ns
            for n in 0..<22 {
                let item = #"{"order":\#(40 + n),"type":"text","text":"n\#(n)","checkAll":true}"#
                #expect(try demo.call("PUT", "/private/admin/pendingContent/n\(n).json?ns=\(ns)", item).status == 200)
                #expect(try demo.call("POST", "/.canopy/publish?ns=\(ns)").status == 200)
            }
            var r = try demo.call("GET", "/.canopy/history?ns=\(ns)")
            #expect(r.json?["limit"] == 20)
            var entries = r.json?["entries"]?.arrayValue ?? []
            #expect(entries.count == 20)
            #expect(entries.first?["itemCount"] == 31)
            #expect(entries.first?["current"] == true)
            #expect(entries.first?["publisher"] == "admin")
            #expect(entries.last?["itemCount"] == 12)
            #expect(entries.dropFirst().allSatisfy { $0["current"] == false })
            let times = entries.compactMap { $0["publishedAt"]?.int64Value }
            #expect(times == times.sorted(by: >))

            // Each entry's snapshot, put together from the versions it names: the oldest kept has n0 to n2.
            let oldest = try #require(entries.last?["id"]?.stringValue)
            r = try demo.call("GET", "/.canopy/history?ns=\(ns)&id=\(oldest)")
            #expect(r.status == 200)
            #expect(r.json?["id"] == .string(oldest))
            #expect(r.json?["content"]?["n2"]?["text"] == "n2")
            #expect(r.json?["content"]?["n3"] == nil)
            #expect(r.json?["content"]?.members?.count == 12)
            r = try demo.call("GET", "/.canopy/history?ns=\(ns)&id=nope")
            #expect(r.status == 404)
            #expect(r.json?["error"]?.stringValue?.contains("nope") == true)

            // Back to the oldest one kept: still 20 entries, the rollback first.
            #expect(try demo.call("POST", "/.canopy/rollback?ns=\(ns)&to=\(oldest)").status == 200)
            r = try demo.call("GET", "/.canopy/history?ns=\(ns)")
            entries = r.json?["entries"]?.arrayValue ?? []
            #expect(entries.count == 20)
            #expect(entries.first?["rollbackOf"] == .string(oldest))
            #expect(entries.first?["itemCount"] == 12)
            #expect(entries.first?["current"] == true)
            #expect(try demo.call("GET", "/private/admin/pendingContent/n5.json?ns=\(ns)").json == .null)
            #expect(try demo.call("POST", "/.canopy/rollback?ns=\(ns)&to=\(oldest)").status == 404)
        }
    }

    @Test(arguments: [
        // An expression error: at the offending character inside the rule string.
        ("{\n  \"rules\": {\n    \".read\": \"auth != null &&\",\n    \".write\": false\n  }\n}\n", "/rules/.read", 3, 30),
        // A structural error: at the key.
        ("{\n  \"rules\": {\n    \".read\": true,\n    \".wrote\": false\n  }\n}\n", "/rules/.wrote", 4, 5),
        // A JSON syntax error: where the parser stopped.
        ("{\n  \"rules\": {\n    \".read\": true,\n  }\n}\n", "/", 4, 3),
        // Nested, after a comment and a rule continued over two lines.
        ("// event rules\n{\"rules\": {\"users\": {\"$uid\": {\n  \".read\": \"auth != null &&\n     auth.uid == $uidd\"}}}}\n",
         "/rules/users/$uid/.read", 4, 18),
    ])
    func aRejectedRulesPutNamesItsLineAndColumn(source: String, path: String, line: Int, column: Int) throws {
        try withDemo { demo in
            let ns = Self.ns
            let before = try demo.client.request("GET", "/.settings/rules.json?ns=\(ns)", headers: demo.admin).body
            let r = try demo.call("PUT", "/.settings/rules.json?ns=\(ns)", source)
            #expect(r.status == 400)
            #expect(r.json?["path"] == .string(path))
            #expect(r.json?["line"] == .int(Int64(line)))
            #expect(r.json?["column"] == .int(Int64(column)))
            #expect(r.json?["error"]?.stringValue?.isEmpty == false)
            #expect(try demo.client.request("GET", "/.settings/rules.json?ns=\(ns)", headers: demo.admin).body == before)
        }
    }
}
