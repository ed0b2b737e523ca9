// RESTParameterTests -- Firebase's REST parameters beyond queries: timeout, writeSizeLimit, download, method
// override, and reading a `.priority`; and rules text kept as it was written.

import CanopyCore
import CanopyNet
import Foundation
import Testing

@Suite struct RESTParameterTests {
    private let admin = [("Authorization", "Bearer owner")]

    @Test(arguments: ["", "0s", "-1s", "3", "3h", "1.5s", "16min", "900001ms", "99999999999999999999s", "s", "3 s"])
    func anInvalidTimeoutIsRefused(text: String) throws {
        try withServer(configure: { $0.emulator = true }) { (server: InProcessServer) throws in
            let escaped = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
            let answer = try server.client().json("GET", "/a.json?ns=t&timeout=\(escaped)", headers: admin)
            #expect(answer.status == 400, "\(text)")
            #expect(answer.json?["error"]?.stringValue?.contains("timeout") == true)
        }
    }

    @Test func aValidTimeoutIsAcceptedAndBoundsARead() throws {
        let gate = SyncGate()
        try withServer(configure: { $0.emulator = true; $0.beforeWALSync = { gate.beforeSync() } }) { server in
            let c = server.client()
            for text in ["1ms", "3s", "15min", "900000ms"] {
                #expect(try c.json("GET", "/a.json?ns=t&timeout=\(text)", headers: admin).status == 200, "\(text)")
            }
            // A read behind a write whose sync is held cannot be answered: it fails after its timeout.
            gate.arm()
            let port = server.port
            let pending = DispatchSemaphore(value: 0)
            Thread {
                let writer = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 20)
                _ = try? writer.json("PUT", "/a.json?ns=t", "1", headers: [("Authorization", "Bearer owner")])
                pending.signal()
            }.start()
            #expect(gate.waitUntilHeld())
            let late = try c.json("GET", "/a.json?ns=t&timeout=200ms", headers: admin)
            #expect(late.status == 400)
            #expect(late.json?["error"]?.stringValue?.contains("timeout") == true)
            gate.release()
            #expect(pending.wait(timeout: .now() + 10) == .success)
            #expect(try c.json("GET", "/a.json?ns=t&timeout=3s", headers: admin).json == 1)
        }
    }

    @Test func writeSizeLimitIsValidatedAndHonoured() throws {
        try withServer(configure: { $0.emulator = true }) { (server: InProcessServer) throws in
            let c = server.client()
            let bogus = try c.json("PUT", "/a.json?ns=w&writeSizeLimit=huge", "1", headers: admin)
            #expect(bogus.status == 400)
            let big = "{" + (0..<1_500).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}"
            // 1,500 nodes: over tiny's budget (1,000), within small's.
            let tiny = try c.json("PUT", "/big.json?ns=w&writeSizeLimit=tiny", big, headers: admin)
            #expect(tiny.status == 400)
            #expect(tiny.json?["error"]?.stringValue?.hasPrefix("write_too_big") == true)
            #expect(try c.json("GET", "/big.json?ns=w&shallow=true", headers: admin).json == .null)
            #expect(try c.json("PUT", "/big.json?ns=w&writeSizeLimit=small", big, headers: admin).status == 200)
            // Deleting it counts what it removes; a PATCH counts each member.
            #expect(try c.json("DELETE", "/big.json?ns=w&writeSizeLimit=tiny", headers: admin).status == 400)
            let patch = try c.json("PATCH", "/.json?ns=w&writeSizeLimit=tiny", #"{"big":null,"x":1}"#, headers: admin)
            #expect(patch.status == 400)
            #expect(try c.json("DELETE", "/big.json?ns=w&writeSizeLimit=unlimited", headers: admin).status == 200)
            #expect(try c.json("PUT", "/small.json?ns=w&writeSizeLimit=tiny", #"{"a":1}"#, headers: admin).status == 200)
        }
    }

    @Test func downloadOffersTheAnswerAsAFile() throws {
        try withServer(configure: { $0.emulator = true }) { (server: InProcessServer) throws in
            let c = server.client()
            #expect(try c.json("PUT", "/a.json?ns=d", #"{"b":1}"#, headers: admin).status == 200)
            let file = try c.json("GET", "/a.json?ns=d&download=backup.json", headers: admin)
            #expect(file.status == 200)
            #expect(file.response.header("content-disposition") == #"attachment; filename="backup.json""#)
            #expect(file.json == ["b": 1])
            #expect(try c.json("GET", "/a.json?ns=d&download=a%22b", headers: admin).status == 400)
            let plain = try c.json("GET", "/a.json?ns=d", headers: admin)
            #expect(plain.response.header("content-disposition") == nil)
        }
    }

    @Test func anUnknownMethodOverrideIsRefusedAndPushesNothing() throws {
        try withServer(configure: { $0.emulator = true }) { (server: InProcessServer) throws in
            let c = server.client()
            let header = try c.json("POST", "/list.json?ns=m", "1", headers: admin + [("X-HTTP-Method-Override", "BOGUS")])
            #expect(header.status == 400)
            #expect(header.json?["error"]?.stringValue?.contains("X-HTTP-Method-Override") == true)
            #expect(try c.json("POST", "/list.json?ns=m&x-http-method-override=bogus", "1", headers: admin).status == 400)
            #expect(try c.json("GET", "/list.json?ns=m", headers: admin).json == .null)
            // Known overrides still work, in any case.
            #expect(try c.json("POST", "/a.json?ns=m", "2", headers: admin + [("X-HTTP-Method-Override", "put")]).status == 200)
            #expect(try c.json("GET", "/a.json?ns=m", headers: admin).json == 2)
        }
    }

    @Test func aPriorityIsReadAsAValueUnderItsParentsRules() throws {
        try withServer(configure: { $0.emulator = true }) { (server: InProcessServer) throws in
            let c = server.client()
            let rules = #"{"rules": {"open": {".read": true}, ".write": true}}"#
            #expect(try c.json("PUT", "/.settings/rules.json?ns=p", rules, headers: admin).status == 200)
            #expect(try c.json("PUT", "/open.json?ns=p", #"{".value":"v",".priority":7}"#, headers: admin).status == 200)
            #expect(try c.json("PUT", "/closed.json?ns=p", #"{"x":1,".priority":"z"}"#, headers: admin).status == 200)
            #expect(try c.json("GET", "/open/.priority.json?ns=p").json == 7)
            #expect(try c.json("GET", "/closed/.priority.json?ns=p").status == 401)
            #expect(try c.json("GET", "/closed/.priority.json?ns=p", headers: admin).json == "z")
            #expect(try c.json("GET", "/open/none/.priority.json?ns=p").json == .null)
            #expect(try c.json("PUT", "/open/.priority.json?ns=p", "8", headers: admin).status == 200)
            #expect(try c.json("GET", "/open/.priority.json?ns=p").json == 8)
            #expect(try c.json("GET", "/open/.priority.json?ns=p&orderBy=%22$key%22").status == 400)
        }
    }

    /// Rules over several lines, with comments: accepted, enforced, and shown back exactly as stored.
    @Test func rulesTextIsKeptAsWrittenAndMayBreakLinesInsideStrings() throws {
        try withServer(configure: { $0.emulator = true }) { (server: InProcessServer) throws in
            let c = server.client()
            let rules = """
                {
                  // Only short names, checked over two lines.
                  "rules": {
                    ".read": true,
                    "name": {
                      ".write": true,
                      ".validate": "newData.isString()
                                    && newData.val().length < 5"   /* the end of the rule */
                    }
                  }
                }
                """
            #expect(try c.json("PUT", "/.settings/rules.json?ns=r", rules, headers: admin).status == 200)
            let stored = try c.request("GET", "/.settings/rules.json?ns=r", headers: admin)
            #expect(String(decoding: stored.body, as: UTF8.self) == rules)
            #expect(stored.header("content-type")?.hasPrefix("application/json") == true)
            #expect(try c.json("PUT", "/name.json?ns=r", #""abc""#).status == 200)
            #expect(try c.json("PUT", "/name.json?ns=r", #""abcdef""#).status == 401)
            #expect(try c.json("PUT", "/name.json?ns=r", "12").status == 401)
        }
    }
}
