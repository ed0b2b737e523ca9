// ColdStartBenchmark -- `canopy bench coldstart`: the first reads of a large namespace after a restart.
//
// Starts a daemon as a child process and fills namespace A through REST with `--objects` objects under `/items`
// (one flat list; each object has `--fields` fields: an integer, a boolean and strings of `--value-bytes`
// bytes), in PATCHes of 1,000 objects (with `--shape flags`, `/items` is one list of `--objects` `true` flags),
// and namespace B with one small value. The daemon is then restarted (its clean stop checkpoints the WAL, so A's
// file holds everything) once per measured request, so each one is the first request A gets:
//   1. the first GET of a small path (one field of one object),
//   2. the first GET of the root with `shallow=true`,
//   3. the first listen of that small path over a WebSocket (the wire protocol: connect, `gauth`, `q`, until the
//      value's `d` arrives),
//   4. the same listen over long polling (`/.lp`: the start request, then one poll carrying `auth` and `q`, until
//      an answer holds the value's `d`),
//   5. the first write (a PUT of one field), which needs A's whole tree.
// After each, a second request to A waits until its tree is loaded and the daemon's resident memory (VmRSS) is
// read; its growth since before the first request is what the loaded tree costs, compared with the size of A's
// file. During the first restart a client reads B every millisecond (as `bench isolation`): B's p50/p99/max show
// whether the other namespaces stall while A loads. `--server` runs another `canopy` binary.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization

/// `canopy bench coldstart [--objects N] [--fields N] [--value-bytes N] [--shape records|flags]
/// [--server <canopy binary>]`.
struct ColdStartBenchmark {
    var objects = 200_000
    var fields = 12
    var valueBytes = 56
    /// The list's children are `fields`-field records, or plain `true` leaves (`flags`).
    var flags = false
    var binary: String?

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--objects": objects = try arguments.int(for: option, in: 1...10_000_000)
            case "--fields": fields = try arguments.int(for: option, in: 3...1_000)
            case "--value-bytes": valueBytes = try arguments.int(for: option, in: 1...1_000_000)
            case "--shape":
                switch try arguments.value(for: option) {
                case "records": flags = false
                case "flags": flags = true
                case let other: throw .invalidValue(option, other, expected: "records or flags")
                }
            case "--server": binary = try arguments.value(for: option)
            default: throw .unknownOption(option, command: "bench coldstart")
            }
        }
    }

    func run() throws {
        let data = NSTemporaryDirectory() + "canopy-bench-coldstart-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: data) }
        print(
            flags
                ? "canopy bench coldstart: A holds one list of \(objects) true flags"
                : "canopy bench coldstart: A holds \(objects) objects of \(fields) fields (\(valueBytes)-byte strings)")
        var server = try PublishBenchServer(namespace: "a", binary: binary, dataDirectory: data)
        let fillStart = benchNow()
        try fill(server)
        let b = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 60)
        let admin = [("Authorization", "Bearer \(server.adminCredential)")]
        guard try b.request("PUT", "/room/title.json?ns=b", headers: admin, body: Array(#""hello""#.utf8)).status == 200
        else { throw CommandFailure("could not write namespace b") }
        b.close()
        print("filled A in \(Int(PublishBenchmark.milliseconds(benchNow() - fillStart))) ms")
        server.stop()
        let fileBytes = Self.fileSize(data + "/a.sqlite") + Self.fileSize(data + "/a.sqlite-wal")
        print(String(format: "A's file: %.1f MB", Double(fileBytes) / 1e6))

        let small = "/items/\(Self.key(objects / 2))" + (flags ? "" : "/f2") + ".json"
        let cases: [(name: String, method: String, target: String, body: String?)] = [
            ("first GET of a small path", "GET", small, nil),
            ("first GET /?shallow=true", "GET", "/.json?shallow=true", nil),
            ("first listen (WebSocket)", "LISTEN", String(small.dropLast(".json".count)), nil),
            ("first listen (long polling)", "LONGPOLL", String(small.dropLast(".json".count)), nil),
            ("first PUT of a small path", "PUT", small + "?print=silent", #""changed""#),
        ]
        for (index, item) in cases.enumerated() {
            server = try PublishBenchServer(namespace: "a", binary: binary, dataDirectory: data)
            defer { server.stop() }
            try BReader.open(port: server.port, headers: admin)
            let reader = index == 0 ? BReader(port: server.port, credential: server.adminCredential) : nil
            reader?.start()
            Thread.sleep(forTimeInterval: 0.3)
            let rssBefore = Self.residentBytes(server.processID)
            let client = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 300)
            let headers = admin + [("Content-Type", "application/json")]
            let start = benchNow()
            let answerBytes: Int
            if item.method == "LISTEN" {
                answerBytes = try Self.firstListen(port: server.port, credential: server.adminCredential, path: item.target)
            } else if item.method == "LONGPOLL" {
                answerBytes = try Self.firstLongPollListen(
                    port: server.port, credential: server.adminCredential, path: item.target)
            } else {
                let response = try client.request(
                    item.method, item.target + (item.target.contains("?") ? "&" : "?") + "ns=a", headers: headers,
                    body: item.body.map { Array($0.utf8) } ?? [])
                guard (200..<300).contains(response.status) else {
                    throw CommandFailure("\(item.method) \(item.target) failed (\(response.status)): \(response.text)")
                }
                answerBytes = response.body.count
            }
            let firstEnd = benchNow()
            // A write needs the whole tree: once one is acknowledged, A is loaded.
            let loadedResponse = try client.request(
                "PUT", "/probe.json?print=silent&ns=a", headers: headers, body: Array("1".utf8))
            let loadedEnd = benchNow()
            guard (200..<300).contains(loadedResponse.status) else { throw CommandFailure("the probe write failed") }
            client.close()
            Thread.sleep(forTimeInterval: 0.3)
            let rssAfter = Self.residentBytes(server.processID)
            reader?.stop()
            let grown = Double(rssAfter - rssBefore)
            print(
                String(
                    format: "%-28@ %8.1f ms   (%@ bytes)   fully loaded after %8.1f ms   RSS +%.1f MB = %.2fx the file",
                    item.name as NSString, PublishBenchmark.milliseconds(firstEnd - start),
                    "\(answerBytes)" as NSString, PublishBenchmark.milliseconds(loadedEnd - start),
                    grown / 1e6, grown / Double(max(fileBytes, 1))))
            if let reader {
                print(
                    IsolationBenchmark.row(
                        "  B meanwhile", reader.samples(dueFrom: start, to: loadedEnd),
                        phaseMilliseconds: PublishBenchmark.milliseconds(loadedEnd - start)))
            }
        }
    }

    /// Opens a long-poll session of namespace A and sends `auth` and a listen at `path` in its first poll, as the
    /// SDK's script tags do (web-safe base64 segments); polls until an answer holds the listen's value. Returns
    /// the bytes of the answers.
    static func firstLongPollListen(port: Int, credential: String, path: String) throws -> Int {
        let http = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 300)
        defer { http.close() }
        let started = try http.request("GET", "/.lp?start=t&ser=1&cb=1&v=5&ns=a")
        let pieces = started.text.components(separatedBy: #""start",""#).last?.split(separator: "\"") ?? []
        guard started.status == 200, pieces.count >= 3 else {
            throw CommandFailure("long-poll start failed (\(started.status)): \(started.text.prefix(200))")
        }
        let session = "id=\(pieces[0])&pw=\(pieces[2])&ns=a"
        let messages: [JSONValue] = [
            ["t": "d", "d": ["r": 1, "a": "auth", "b": ["cred": .string(credential)]]],
            ["t": "d", "d": ["r": 2, "a": "q", "b": ["p": .string(path), "h": ""]]],
        ]
        var segments = ""
        for (index, message) in messages.enumerated() {
            let data = Base64.encode(Array(message.serialized().utf8), url: true, padding: false)
            segments += "&seg\(index)=\(index)&ts\(index)=1&d\(index)=\(data)"
        }
        var bytes = started.body.count
        var target = "/.lp?\(session)&ser=2" + segments
        for serial in 3..<1_000 {
            let answer = try http.request("GET", target)
            guard answer.status == 200 else { throw CommandFailure("long poll failed (\(answer.status))") }
            bytes += answer.body.count
            if answer.text.contains(#""a":"d""#) && answer.text.contains(path) { return bytes }
            target = "/.lp?\(session)&ser=\(serial)"
        }
        throw CommandFailure("long poll: no value after 1,000 polls")
    }

    /// Connects a WebSocket to namespace A, authenticates and listens at `path`; returns once the listen's value
    /// arrived (the size of that message).
    static func firstListen(port: Int, credential: String, path: String) throws -> Int {
        let loop = try EventLoop()
        let thread = Thread { loop.run() }
        thread.start()
        defer { loop.stop() }
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Int, CommandFailure>?>(nil)
        @Sendable func finish(_ result: Result<Int, CommandFailure>) {
            let first = outcome.withLock { current in
                defer { if current == nil { current = result } }
                return current == nil
            }
            if first { done.signal() }
        }
        let auth: JSONValue = ["cred": .string(credential)]
        let listen: JSONValue = ["p": .string(path), "h": ""]
        let held = ListenClientBox()
        loop.execute {
            do {
                let client = try WebSocketClient(loop: loop, host: "127.0.0.1", port: port, target: "/.ws?v=5&ns=a") {
                    if case .failure(let error) = $0 { finish(.failure(CommandFailure("listen: \(error.userMessage)"))) }
                }
                client.onClose = { finish(.failure(CommandFailure("listen: the server closed the connection"))) }
                client.onText = { text in
                    if text.contains(#""a":"d""#) { finish(.success(text.utf8.count)) }
                }
                client.send(text: #"{"t":"d","d":{"r":1,"a":"gauth","b":\#(auth.serialized())}}"#)
                client.send(text: #"{"t":"d","d":{"r":2,"a":"q","b":\#(listen.serialized())}}"#)
                held.client = client
            } catch {
                finish(.failure(CommandFailure("listen: \(error)")))
            }
        }
        guard done.wait(timeout: .now() + 300) == .success else { throw CommandFailure("listen: no value in 300 s") }
        loop.execute {
            held.client?.onClose = nil
            held.client?.close()
        }
        return try outcome.withLock { $0! }.get()
    }

    /// An object key that sorts like its number (Firebase key order puts integer-like keys first; these are not).
    static func key(_ index: Int) -> String {
        let digits = String(index)
        return "o" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }

    /// PATCHes `/items` with 1,000 objects at a time.
    private func fill(_ server: PublishBenchServer) throws {
        let text = String(repeating: "x", count: max(0, valueBytes - 8))
        var next = 0
        while next < objects {
            var members: [JSONMember] = []
            let end = min(objects, next + 1_000)
            members.reserveCapacity(end - next)
            for index in next..<end where flags {
                members.append(JSONMember(Self.key(index), true))
            }
            for index in next..<end where !flags {
                var object = [JSONMember("f0", .int(Int64(index))), JSONMember("f1", .bool(index % 2 == 0))]
                for field in 2..<fields {
                    let tag = String(index % 100_000_000, radix: 16)
                    object.append(JSONMember("f\(field)", .string(String((tag + text).prefix(valueBytes)))))
                }
                members.append(JSONMember(Self.key(index), .object(object)))
            }
            try server.request("PATCH", "/items.json?print=silent", body: .object(members))
            next = end
        }
    }

    static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    /// VmRSS of `pid`, in bytes.
    static func residentBytes(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let number = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            return number * 1024
        }
        return 0
    }
}

/// The listen's client, touched only on its loop's thread.
private final class ListenClientBox: @unchecked Sendable {
    var client: WebSocketClient?
}
