// EventStreamTests -- REST streaming (SSE) events for sets and updates at, below and above the listened location.

import CanopyCore
import CanopyNet
import Foundation
import Testing

/// Reads a stream's chunks until `needle` appears (or `timeout` passes); returns everything read.
func readEvents(_ client: HTTPClient, until needle: String, timeout: TimeInterval = 6) -> String {
    var text = ""
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline, !text.contains(needle) {
        guard let chunk = try? client.readChunk(), !chunk.isEmpty else { break }
        text += String(decoding: chunk, as: UTF8.self)
    }
    return text
}

@Suite struct EventStreamTests {
    /// Firebase streams an update (`PATCH`, `update()`) at or below the location as one `patch` event whose data
    /// holds the updated children relative to its path; a set is a `put`; a write above the location is a `put`
    /// of the location's new value at "/".
    @Test func setsArePutsAndUpdatesArePatches() throws {
        func event(_ name: String, _ data: String) -> String { "event: \(name)\ndata: \(data)\n\n" }
        try withServer { server in
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            func write(_ method: String, _ path: String, _ body: String) throws {
                #expect(try c.json(method, "\(path).json?ns=sse", body, headers: admin).status == 200)
            }
            try write("PUT", "/rooms", #"{"r1":{"name":"Lobby"}}"#)
            let stream = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 5)
            let head = try stream.openStream("/rooms.json?ns=sse", headers: admin + [("Accept", "text/event-stream")])
            #expect(head.status == 200)
            #expect(readEvents(stream, until: "\n\n") == event("put", #"{"path":"/","data":{"r1":{"name":"Lobby"}}}"#))

            // An update at the location: one patch at "/" (removing a child that was not there changes nothing).
            // Its keys are immediate children, each with its whole new value: `r2/name` streams as `r2`.
            try write("PUT", "/rooms/r2/seats", "40")
            #expect(readEvents(stream, until: "\n\n") == event("put", #"{"path":"/r2/seats","data":40}"#))
            try write("PATCH", "/rooms", #"{"r2/name":"Stage","r1":{"name":"Hall"},"gone":null,"r2/open":true}"#)
            let patch = #"{"path":"/","data":{"r2":{"name":"Stage","open":true,"seats":40},"r1":{"name":"Hall"}}}"#
            #expect(readEvents(stream, until: "\n\n") == event("patch", patch))
            // An update below it: a patch at the update's path.
            try write("PATCH", "/rooms/r1", #"{"open":true,"name":null}"#)
            #expect(
                readEvents(stream, until: "\n\n")
                    == event("patch", #"{"path":"/r1","data":{"open":true,"name":null}}"#))
            // A set below it: a put.
            try write("PUT", "/rooms/r2/name", #""Main stage""#)
            #expect(readEvents(stream, until: "\n\n") == event("put", #"{"path":"/r2/name","data":"Main stage"}"#))
            // An update above it: only what lies inside, as puts (the listener sees no sibling of its location).
            try write("PATCH", "/", #"{"rooms/r3":1,"elsewhere":2}"#)
            #expect(readEvents(stream, until: "\n\n") == event("put", #"{"path":"/r3","data":1}"#))
            // An update that only removes what is not there changes nothing and sends nothing.
            try write("PATCH", "/rooms", #"{"nothing":null}"#)
            try write("PUT", "/rooms/r3", "2")
            #expect(readEvents(stream, until: "\n\n") == event("put", #"{"path":"/r3","data":2}"#))
        }
    }
}
