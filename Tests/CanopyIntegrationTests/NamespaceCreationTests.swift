// NamespaceCreationTests -- a namespace's SQLite file is created by its first stored write, and by nothing else.
//
// Namespaces spring into existence on first use, as in the Firebase emulator. Refused requests must still change
// nothing: before, an anonymous listen, stream or refused write to `?ns=<anything>` created a database file (and a
// store's two threads) for every name it tried.

import CanopyCore
import CanopyNet
import Foundation
import Testing

@testable import CanopyServer

@Suite struct NamespaceCreationTests {
    private func files(_ server: InProcessServer) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: server.dataDirectory)) ?? [])
            .filter { $0.contains(".sqlite") }
    }

    @Test func refusedRequestsCreateNoFileAndTheFirstWriteDoes() throws {
        try withServer { server in
            let c = server.client()
            for (method, body) in [("GET", ""), ("PUT", "1"), ("PATCH", #"{"x":1}"#), ("POST", "1")] {
                let status = try c.json(method, "/a.json?ns=spam-\(method.lowercased())", body).status
                #expect(status == 401 || status == 403, "\(method)")
            }
            let stream = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 5)
            let head = try stream.openStream("/a.json?ns=spam-sse", headers: [("Accept", "text/event-stream")])
            #expect(head.status != 200)
            let wire = WireProtocolTests()
            let socket = try wire.connect(server, "spam-ws")
            #expect(socket.reply(socket.request("q", ["p": "/a", "h": ""]))?["d"]?["b"]?["s"] == "permission_denied")
            #expect(socket.reply(socket.request("p", ["p": "/a", "d": 1]))?["d"]?["b"]?["s"] == "permission_denied")
            #expect(files(server).isEmpty)

            // The admin's first write creates the file.
            let admin = [("Authorization", "Bearer \(server.admin)")]
            #expect(try c.json("PUT", "/a.json?ns=spam-ws", "1", headers: admin).status == 200)
            #expect(files(server).contains("spam-ws.sqlite"))
            #expect(try c.json("GET", "/a.json?ns=spam-ws", headers: admin).json == 1)
        }
    }

    /// When the file cannot be created, the first write fails with an error and changes nothing; a later one works.
    @Test func aFileThatCannotBeCreatedFailsTheWriteAndChangesNothing() throws {
        try withServer { server in
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            // The namespace is opened (empty, without a file) by a read; then its file's name is taken by a
            // directory, so SQLite cannot create it.
            #expect(try c.json("GET", "/.json?ns=blocked", headers: admin).status == 200)
            let sse = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 5)
            let head = try sse.openStream("/.json?ns=blocked", headers: admin + [("Accept", "text/event-stream")])
            #expect(head.status == 200)
            let blocker = server.dataDirectory + "/blocked.sqlite"
            try FileManager.default.createDirectory(atPath: blocker, withIntermediateDirectories: false)
            let failed = try c.json("PUT", "/a.json?ns=blocked", #"{"b":1}"#, headers: admin)
            #expect(failed.status == 500)
            #expect(failed.json?["error"]?.stringValue?.contains("nothing was changed") == true)
            #expect(try c.json("GET", "/a.json?ns=blocked", headers: admin).json == .null)

            try FileManager.default.removeItem(atPath: blocker)
            #expect(try c.json("PUT", "/a.json?ns=blocked", #"{"b":2}"#, headers: admin).status == 200)
            #expect(try c.json("GET", "/a.json?ns=blocked", headers: admin).json == ["b": 2])
            // The stream never saw the failed write: its first event after the initial one is the second write.
            #expect(readEvents(sse, until: "\n\n").hasPrefix("event: put\ndata: {\"path\":\"/\",\"data\":null}"))
            #expect(readEvents(sse, until: "\n\n") == "event: put\ndata: {\"path\":\"/a\",\"data\":{\"b\":2}}\n\n")
        }
    }

    /// Namespaces that were only named (never written) are forgotten once nothing uses them, so requests naming
    /// ever new namespaces cannot grow memory without bound; one a socket still uses, or one with data, stays.
    @Test func namespacesOnlyNamedAreForgottenOnceUnused() throws {
        try withServer { server in
            let wire = WireProtocolTests()
            let holder = try wire.connect(server, "held")
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            #expect(try c.json("PUT", "/a.json?ns=kept", "1", headers: admin).status == 200)
            for i in 0..<300 {
                #expect(try c.json("PUT", "/a.json?ns=spam\(i)", "1").status == 401)
            }
            let open = server.daemon.openNamespaceNames()
            #expect(open.count < 150)
            #expect(open.contains("held") && open.contains("kept"))
            // The socket's namespace is still the one the daemon serves: an admin write reaches its listen.
            try wire.authAsAdmin(holder, server)
            #expect(holder.reply(holder.request("q", ["p": "/a", "h": ""]))?["d"]?["b"]?["s"] == "ok")
            #expect(holder.push("d", path: "/a")?["d"]?["b"]?["d"] == .null)
            #expect(try c.json("PUT", "/a.json?ns=held", "2", headers: admin).status == 200)
            #expect(holder.push("d", path: "/a")?["d"]?["b"]?["d"] == 2)
        }
    }
}
