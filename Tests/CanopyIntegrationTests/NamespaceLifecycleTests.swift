// NamespaceLifecycleTests -- namespaces load off the event loop, wait within bounds, close when idle, reopen intact.
//
// A namespace's tree is loaded on a store thread: a slow load of one namespace must not delay the others, a load
// that fails or takes too long must answer with an error instead of hanging, idle namespaces are closed and
// reopened on demand with their data, and the daemon's threads do not grow with the number of namespaces.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization
import Testing

@testable import CanopyServer

/// Holds the load of the namespaces it names until released (`ServerConfiguration.beforeNamespaceLoad`).
private final class LoadGate: Sendable {
    private let held: Set<String>
    private let released = DispatchSemaphore(value: 0)
    private let arrived = DispatchSemaphore(value: 0)

    init(_ names: Set<String>) { held = names }

    func hook(_ name: String) {
        guard held.contains(name) else { return }
        arrived.signal()
        released.wait()
        released.signal()  // a latch: later loads pass too
    }

    /// Waits until a held load reached the gate.
    func waitUntilHeld() -> Bool { arrived.wait(timeout: .now() + 10) == .success }
    func release() { released.signal() }
}

@Suite struct NamespaceLifecycleTests {
    private let adminHeader = { (server: InProcessServer) in [("Authorization", "Bearer \(server.admin)")] }

    /// Writes `values` (namespace → value at /v) with one daemon and returns its data directory (kept).
    private func prepare(_ values: [String: JSONValue]) throws -> String {
        let server = try InProcessServer()
        for (name, value) in values {
            let status = try server.client().json(
                "PUT", "/v.json?ns=\(name)", value.serialized(), headers: adminHeader(server)
            ).status
            #expect(status == 200)
        }
        server.stop(removeData: false)
        return server.dataDirectory
    }

    /// A daemon on an existing data directory.
    private func restart(_ directory: String, configure: @escaping (inout ServerConfiguration) -> Void) throws
        -> InProcessServer
    {
        try InProcessServer { configuration in
            configuration.dataDirectory = directory
            configure(&configuration)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aSlowLoadOfOneNamespaceDoesNotDelayReadsOfAnother() throws {
        let directory = try prepare(["a": "alpha", "b": "beta"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gate = LoadGate(["a"])
        let server = try restart(directory) { $0.beforeNamespaceLoad = { gate.hook($0) } }
        defer { server.stop(removeData: false) }
        let admin = adminHeader(server)
        let answer = Mutex<JSONValue?>(nil)
        let answered = DispatchSemaphore(value: 0)
        let port = server.port
        Thread {
            let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 20)
            answer.withLock { $0 = try? client.json("GET", "/v.json?ns=a", headers: admin).json }
            answered.signal()
        }.start()
        #expect(gate.waitUntilHeld())
        // A's load is held on a store thread: B loads and answers meanwhile, and so does a new namespace.
        #expect(try server.client().json("GET", "/v.json?ns=b", headers: admin).json == "beta")
        #expect(try server.client().json("PUT", "/v.json?ns=c", #""gamma""#, headers: admin).status == 200)
        #expect(answered.wait(timeout: .now() + 0.2) == .timedOut)
        gate.release()
        #expect(answered.wait(timeout: .now() + 10) == .success)
        #expect(answer.withLock { $0 } == "alpha")
    }

    @Test(.timeLimit(.minutes(1)))
    func aLoadThatTakesTooLongAnswers503AndTheNamespaceServesOnceLoaded() throws {
        let directory = try prepare(["slow": "value"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gate = LoadGate(["slow"])
        let server = try restart(directory) {
            $0.beforeNamespaceLoad = { gate.hook($0) }
            $0.namespaceLoadTimeoutMilliseconds = 100
        }
        defer { server.stop(removeData: false) }
        let admin = adminHeader(server)
        let waited = try server.client().json("GET", "/v.json?ns=slow", headers: admin)
        #expect(waited.status == 503)
        #expect(waited.json?["error"]?.stringValue?.contains("did not finish loading") == true)
        gate.release()
        var value: JSONValue?
        for _ in 0..<200 where value != "value" {
            let response = try server.client().json("GET", "/v.json?ns=slow", headers: admin)
            value = response.json
            if response.status == 503 { Thread.sleep(forTimeInterval: 0.01) }
        }
        #expect(value == "value")
    }

    @Test(.timeLimit(.minutes(1)))
    func aFileThatCannotBeOpenedAnswersWithAnErrorNotAHang() throws {
        try withServer { server in
            let garbage = Array(repeating: UInt8(ascii: "x"), count: 8192)
            let file = server.dataDirectory + "/broken.sqlite"
            #expect(FileManager.default.createFile(atPath: file, contents: Data(garbage)))
            let admin = adminHeader(server)
            let response = try server.client().json("GET", "/v.json?ns=broken", headers: admin)
            #expect(response.status == 500)
            #expect(response.json?["error"]?.stringValue == "The database for namespace 'broken' could not be opened.")
            // Other namespaces are unaffected.
            #expect(try server.client().json("PUT", "/v.json?ns=fine", "1", headers: admin).status == 200)
        }
    }

    /// A key may start with a combining accent (Firebase allows any character but . $ # [ ] / and controls). Its
    /// row key `a/\u{301}b` used to be read back as one key, "a" + "/" + the accent being one `Character`, and the
    /// namespace then failed to open after a restart.
    @Test(.timeLimit(.minutes(1)))
    func keysThatStartWithACombiningAccentComeBackAfterARestart() throws {
        let value: JSONValue = ["a": ["\u{301}b": "v", "e\u{301}": ["\u{200D}": 1]]]
        let directory = try prepare(["accent": value])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try restart(directory) { _ in }
        defer { server.stop(removeData: false) }
        #expect(try server.client().json("GET", "/v.json?ns=accent", headers: adminHeader(server)).json == value)
    }

    @Test(.timeLimit(.minutes(1)))
    func anIdleNamespaceIsClosedAndReopenedWithItsData() throws {
        try withServer(configure: { $0.namespaceIdleMilliseconds = 40 }) { (server: InProcessServer) throws in
            let admin = adminHeader(server)
            let c = server.client()
            #expect(try c.json("PUT", "/room.json?ns=idle", #"{"a":1,"b":{"c":"x"}}"#, headers: admin).status == 200)
            var open = server.daemon.openNamespaceNames()
            for _ in 0..<500 where open.contains("idle") {
                Thread.sleep(forTimeInterval: 0.01)
                open = server.daemon.openNamespaceNames()
            }
            #expect(!open.contains("idle"))
            #expect(try c.json("GET", "/room.json?ns=idle", headers: admin).json == ["a": 1, "b": ["c": "x"]])
            // Writable again after reopening.
            #expect(try c.json("PATCH", "/room.json?ns=idle", #"{"a":2}"#, headers: admin).status == 200)
            #expect(try c.json("GET", "/room/a.json?ns=idle", headers: admin).json == 2)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func namespacesOverTheBudgetAreClosedLeastRecentlyUsedFirst() throws {
        let names = (0..<6).map { "n\($0)" }
        let directory = try prepare(Dictionary(uniqueKeysWithValues: names.map { ($0, JSONValue.string($0)) }))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try restart(directory) { $0.maxOpenNamespaces = 2 }
        defer { server.stop(removeData: false) }
        let admin = adminHeader(server)
        // A wire session holds n0: it is in use and stays open however far over the budget the others go.
        let wire = WireProtocolTests()
        let holder = try wire.connect(server, "n0")
        for name in names {
            #expect(try server.client().json("GET", "/v.json?ns=\(name)", headers: admin).json == .string(name))
        }
        // n5's GET may have been answered from its file while its tree loads (RESTEarlyRead): it is open once loaded.
        var open = Set(server.daemon.openNamespaceNames())
        for _ in 0..<500 where !open.contains("n5") {
            Thread.sleep(forTimeInterval: 0.01)
            open = Set(server.daemon.openNamespaceNames())
        }
        #expect(open.count <= 3, "\(open)")
        #expect(open.contains("n0") && open.contains("n5"), "\(open)")
        // Every namespace reopens with its data.
        for name in names {
            #expect(try server.client().json("GET", "/v.json?ns=\(name)", headers: admin).json == .string(name))
        }
        holder.close()
    }

    /// A namespace larger than the whole memory budget stays open while it is the one in use: closing it frees
    /// memory for no other namespace, and every request would load it again (a 1 GB namespace was closed between
    /// the writes filling it, and a write meanwhile found it loading). It is closed for the next one used.
    @Test(.timeLimit(.minutes(1)))
    func theNamespaceInUseStaysOpenWhenItAloneExceedsTheMemoryBudget() throws {
        let names = ["big", "other"]
        let directory = try prepare(Dictionary(uniqueKeysWithValues: names.map { ($0, JSONValue.string($0)) }))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Every namespace is over a 1-byte budget; the idle sweep, which enforces it, runs every 500 ms.
        let server = try restart(directory) {
            $0.maxNamespaceMemoryBytes = 1
            $0.namespaceIdleMilliseconds = 2_000
        }
        defer { server.stop(removeData: false) }
        let admin = adminHeader(server)
        func loads() throws -> Int {
            let text = try server.client().request("GET", "/.canopy/metrics", headers: admin).text
            let line = text.split(separator: "\n").first { $0.hasPrefix("canopy_namespace_loads_total ") }
            return line.flatMap { Int($0.split(separator: " ")[1]) } ?? -1
        }
        let start = monotonicNanoseconds()
        var round = 0
        while monotonicNanoseconds() - start < 1_600_000_000 {
            #expect(try server.client().json("GET", "/v.json?ns=big", headers: admin).json == "big")
            let patch = try server.client().json("PATCH", "/w.json?ns=big", #"{"r":\#(round)}"#, headers: admin)
            #expect(patch.status == 200)
            round += 1
        }
        #expect(try loads() == 1, "loaded again while in use")
        #expect(server.daemon.openNamespaceNames() == ["big"])
        // Another namespace used: the budget closes the one used before it, when the load of the new one ends or, if
        // something of the last write still held the old one then (CI once saw it open right after), at the next
        // sweep.
        #expect(try server.client().json("GET", "/v.json?ns=other", headers: admin).json == "other")
        #expect(waitUntil { server.daemon.openNamespaceNames() == ["other"] }, "\(server.daemon.openNamespaceNames())")
        #expect(try server.client().json("GET", "/w/r.json?ns=big", headers: admin).json == .int(Int64(round - 1)))
        #expect(try loads() == 3)
    }

    /// The real binary: its threads do not grow with the number of namespaces (two per namespace before).
    @Test(.timeLimit(.minutes(2)))
    func threadsStayBoundedWithManyNamespaces() throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let daemon = try ServerProcess(dataDirectory: directory)
        defer { daemon.terminate() }
        let client = HTTPClient(host: "127.0.0.1", port: daemon.port, timeoutSeconds: 20)
        let admin = [("Authorization", "Bearer \(daemon.admin)")]
        func threads() -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.process.processIdentifier)/task"))?
                .count ?? -1
        }
        #expect(try client.json("PUT", "/v.json?ns=first", "0", headers: admin).status == 200)
        let before = threads()
        for index in 0..<100 {
            #expect(try client.json("PUT", "/v.json?ns=many\(index)", "\(index)", headers: admin).status == 200)
        }
        let after = threads()
        #expect(before > 0 && after - before <= 2, "threads: \(before) before, \(after) after 100 namespaces")
        #expect(try client.json("GET", "/v.json?ns=many42", headers: admin).json == 42)
    }
}
