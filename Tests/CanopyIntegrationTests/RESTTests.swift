// RESTTests -- the REST API through real sockets against an in-process daemon.

import CanopyCore
import CanopyNet
import Testing

@Suite struct RESTTests {
    @Test func putGetPostPatchDelete() throws {
        try withServer { server in
            let c = server.client()
            let auth = [("Authorization", "Bearer \(server.admin)")]
            var r = try c.json("PUT", "/rooms/a.json?ns=t1", #"{"title":"hi","n":1,"tags":["x","y"]}"#, headers: auth)
            #expect(r.status == 200)
            #expect(r.json == ["title": "hi", "n": 1, "tags": ["x", "y"]])
            r = try c.json("GET", "/rooms.json?ns=t1", headers: auth)
            #expect(r.json == ["a": ["title": "hi", "n": 1, "tags": ["x", "y"]]])
            #expect(r.response.header("access-control-allow-origin") == "*")
            r = try c.json("POST", "/rooms.json?ns=t1", #"{"title":"pushed"}"#, headers: auth)
            let name = try #require(r.json?["name"]?.stringValue)
            #expect(name.count == 20)
            r = try c.json("PATCH", "/rooms/a.json?ns=t1", #"{"n":null,"deep/x":2}"#, headers: auth)
            #expect(r.status == 200)
            r = try c.json("GET", "/rooms/a.json?ns=t1", headers: auth)
            #expect(r.json == ["title": "hi", "tags": ["x", "y"], "deep": ["x": 2]])
            r = try c.json("DELETE", "/rooms/a.json?ns=t1", headers: auth)
            #expect(r.status == 200 && r.response.text == "null")
            r = try c.json("GET", "/rooms.json?ns=t1", headers: auth)
            #expect(r.json == .object([JSONMember(name, ["title": "pushed"])]))
            r = try c.json("PUT", "/x.json?ns=t1&print=silent", "1", headers: auth)
            #expect(r.status == 204 && r.response.body.isEmpty)
        }
    }

    @Test func secureByDefault() throws {
        try withServer { server in
            let c = server.client()
            var r = try c.json("GET", "/.json?ns=t2")
            #expect(r.status == 401)
            #expect(r.json?["error"] == "Permission denied")
            r = try c.json("PUT", "/a.json?ns=t2", "1")
            #expect(r.status == 401)
            r = try c.json("GET", "/.json?ns=t2", headers: [("Authorization", "Bearer owner")])
            #expect(r.status == 401)  // `owner` is admin only in --emulator mode
            r = try c.json("GET", "/.json?ns=t2&auth=\(server.admin)")
            #expect(r.status == 200)
        }
    }

    @Test func theBearerSchemeIsReadInAnyCaseAndOnlyBeforeOneSpace() throws {
        try withServer { server in
            let c = server.client()
            for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
                let r = try c.json("GET", "/.json?ns=t4", headers: [("Authorization", "\(scheme) \(server.admin)")])
                #expect(r.status == 200, "\(scheme)")
            }
            // Not the admin credential: another scheme, no space, a tab, or two spaces (the credential would start
            // with one), and the bare credential.
            for value in [
                "Basic \(server.admin)", "Bearer\(server.admin)", "Bearer\t\(server.admin)", "Bearer  \(server.admin)",
                "Bearers \(server.admin)", "\(server.admin)",
            ] {
                let r = try c.json("GET", "/.json?ns=t4", headers: [("Authorization", value)])
                #expect(r.status == 401 || r.status == 400, "\(value)")
            }
        }
    }

    @Test func emulatorOwnerIsAdmin() throws {
        try withServer(configure: { $0.emulator = true }) { server in
            let r = try server.client().json(
                "PUT", "/a.json?ns=t3", #"{"b":true}"#, headers: [("Authorization", "Bearer owner")])
            #expect(r.status == 200)
        }
    }

    @Test(arguments: [
        ("PUT", "/a.json", "{bad json", 400),
        ("PUT", "/a.json", #"{"bad.key":1}"#, 400),
        ("PUT", "/a$b.json", "1", 400),
        ("PATCH", "/a.json", "[1,2]", 400),
        ("PATCH", "/a.json", #"{"x":1,"x/y":2}"#, 400),
        ("PUT", "/a.json", #"{".sv":"nonsense"}"#, 400),
        ("GET", "/a.json?orderBy=height", "", 400),
        ("GET", "/a.json?limitToFirst=2", "", 400),
        ("GET", "/a.json?shallow=true&orderBy=%22$key%22", "", 400),
        ("GET", "/nope", "", 404),
        ("PROPFIND", "/a.json", "", 405),
    ])
    func badInputGetsClearErrorAndChangesNothing(method: String, target: String, body: String, status: Int) throws {
        try withServer { server in
            let c = server.client()
            let auth = [("Authorization", "Bearer \(server.admin)")]
            _ = try c.json("PUT", "/a.json?ns=bad", #"{"keep":1}"#, headers: auth)
            let separator = target.contains("?") ? "&" : "?"
            let r = try c.json(method, target + separator + "ns=bad", body.isEmpty ? nil : body, headers: auth)
            #expect(r.status == status)
            #expect(r.json?["error"]?.stringValue?.isEmpty == false)
            #expect(try c.json("GET", "/a.json?ns=bad", headers: auth).json == ["keep": 1])
        }
    }

    @Test func etagsAndConditionalWrites() throws {
        try withServer { server in
            let c = server.client()
            let auth = [("Authorization", "Bearer \(server.admin)")]
            var r = try c.json("GET", "/c.json?ns=e", headers: auth + [("X-Firebase-ETag", "true")])
            #expect(r.response.header("etag") == "null_etag")
            r = try c.json("PUT", "/c.json?ns=e", "5", headers: auth + [("if-match", "null_etag")])
            #expect(r.status == 200)
            let tag = try #require(r.response.header("etag"))
            r = try c.json("PUT", "/c.json?ns=e", "6", headers: auth + [("if-match", "null_etag")])
            #expect(r.status == 412)
            #expect(r.json == 5)
            #expect(r.response.header("etag") == tag)
            r = try c.json("GET", "/c.json?ns=e", headers: auth + [("If-None-Match", tag)])
            #expect(r.status == 304)
            r = try c.json("PUT", "/c.json?ns=e", "7", headers: auth + [("if-match", tag)])
            #expect(r.status == 200 && r.json == 7)
        }
    }

    @Test func serverValuesResolveOnTheServer() throws {
        try withServer { server in
            let c = server.client()
            let auth = [("Authorization", "Bearer \(server.admin)")]
            let before = SystemClock().nowMilliseconds()
            _ = try c.json("PUT", "/s.json?ns=sv", #"{"at":{".sv":"timestamp"},"n":5}"#, headers: auth)
            _ = try c.json("PATCH", "/s.json?ns=sv", #"{"n":{".sv":{"increment":2}}}"#, headers: auth)
            let r = try c.json("GET", "/s.json?ns=sv", headers: auth)
            let at = try #require(r.json?["at"]?.int64Value)
            #expect(at >= before && at <= SystemClock().nowMilliseconds())
            #expect(r.json?["n"] == 7)
        }
    }

    @Test func queriesShallowAndExport() throws {
        try withServer { server in
            let c = server.client()
            let auth = [("Authorization", "Bearer \(server.admin)")]
            _ = try c.json(
                "PUT", "/d.json?ns=q",
                #"{"a":{"h":3},"b":{"h":1},"c":{"h":2},"p":{".value":1,".priority":5}}"#, headers: auth)
            // `p` has no `h` child: null sorts first (Firebase's value ordering).
            var r = try c.json("GET", #"/d.json?ns=q&orderBy=%22h%22&limitToFirst=2"#, headers: auth)
            #expect(r.json == ["b": ["h": 1], "p": 1])
            r = try c.json("GET", #"/d.json?ns=q&orderBy=%22h%22&startAt=2"#, headers: auth)
            #expect(r.json == ["a": ["h": 3], "c": ["h": 2]])
            r = try c.json("GET", #"/d.json?ns=q&orderBy=%22$key%22&startAt=%22b%22&endAt=%22c%22"#, headers: auth)
            #expect(r.json == ["b": ["h": 1], "c": ["h": 2]])
            r = try c.json("GET", "/d.json?ns=q&shallow=true", headers: auth)
            #expect(r.json == ["a": true, "b": true, "c": true, "p": true])
            r = try c.json("GET", "/d/p.json?ns=q&format=export", headers: auth)
            #expect(r.json == [".value": 1, ".priority": 5])
            r = try c.json("GET", "/d/p.json?ns=q", headers: auth)
            #expect(r.json == 1)
        }
    }

    @Test func namespacesAreSeparateFiles() throws {
        try withServer { server in
            let c = server.client()
            let auth = [("Authorization", "Bearer \(server.admin)")]
            _ = try c.json("PUT", "/k.json?ns=one", "1", headers: auth)
            _ = try c.json("PUT", "/k.json?ns=two", "2", headers: auth)
            #expect(try c.json("GET", "/k.json?ns=one", headers: auth).json == 1)
            #expect(try c.json("GET", "/k.json?ns=two", headers: auth).json == 2)
            #expect(try c.json("GET", "/k.json?ns=three", headers: auth).json == .null)
            #expect(try c.json("GET", "/k.json?ns=bad%20name", headers: auth).status == 400)
        }
    }

    @Test func corsPreflight() throws {
        try withServer { server in
            let r = try server.client().request("OPTIONS", "/a.json")
            #expect(r.status == 200)
            #expect(r.header("access-control-allow-methods")?.contains("PATCH") == true)
            #expect(r.header("access-control-allow-headers")?.contains("Authorization") == true)
        }
    }
}
