// DraftParsingTests -- a written draft is parsed on the compute thread before anyone publishes it, so that the
// publish finds its items parsed; a draft that does not parse is still the publish's to report.
import CanopyCore
import Foundation
import Synchronization
import Testing

@testable import CanopyServer

@Suite struct DraftParsingTests {
    static let ns = "drafts"

    /// How many parsed items the namespace's cache holds.
    private func parsedCount(_ server: InProcessServer) -> Int? {
        let count = Mutex<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        server.daemon.withNamespace(Self.ns) { namespace in
            count.withLock { $0 = namespace.parsedItems.count }
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success else { return nil }
        return count.withLock { $0 }
    }

    @Test func aDraftIsParsedWhenItIsWrittenBeforeAnyPublish() throws {
        try withServer { server in
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            let draft = "/private/admin/pendingContent"
            let items = """
                {"a": {"order": 1, "type": "text", "text": "for everyone", "checkAll": true},
                 "b": {"order": 2, "type": "text", "text": "for u1", "attendeeIds": ["u1"]}}
                """
            #expect(try c.json("PUT", "/.json?ns=\(Self.ns)", #"{"chat": {"m0": "hi"}}"#, headers: admin).status == 200)
            #expect(parsedCount(server) == 0)
            // A write elsewhere parses nothing; the draft written whole, and then one item of it, is parsed.
            #expect(try c.json("PUT", "\(draft).json?ns=\(Self.ns)", items, headers: admin).status == 200)
            #expect(waitUntil(seconds: 10) { parsedCount(server) == 2 })
            let third = #"{"order": 3, "type": "text", "text": "for u2", "attendeeIds": ["u2"]}"#
            #expect(try c.json("PUT", "\(draft)/c.json?ns=\(Self.ns)", third, headers: admin).status == 200)
            #expect(waitUntil(seconds: 10) { parsedCount(server) == 3 })

            // A draft that does not parse changes nothing here; the publish reports it, as before.
            #expect(try c.json("PUT", "\(draft)/d.json?ns=\(Self.ns)", #"{"type": "text"}"#, headers: admin).status == 200)
            let refused = try c.json("POST", "/.canopy/publish?ns=\(Self.ns)", headers: admin)
            #expect(refused.status == 400)
            #expect(refused.json?["error"]?.stringValue?.contains("order") == true)

            #expect(try c.json("DELETE", "\(draft)/d.json?ns=\(Self.ns)", headers: admin).status == 200)
            #expect(try c.json("POST", "/.canopy/publish?ns=\(Self.ns)", headers: admin).status == 200)
            let user = try c.json("GET", "/private/adminable/users/u2/content.json?ns=\(Self.ns)", headers: admin)
            #expect(user.json?["c"]?["text"] == "for u2")
        }
    }
}
