// BackupTests -- `canopy backup` / `canopy restore` against the real daemon: consistency under writes, exact
// restores, refusals that change nothing, and `kill -9` during either.

import CanopyCore
import CanopyNet
import CanopyStore
import Foundation
import Testing

/// Sequential acknowledged writes `PUT /w/<i>.json = i` from a thread of its own, counting acknowledgements.
private final class ContinuousWriter: @unchecked Sendable {  // safe: every field is read and written under `lock`
    private let lock = NSCondition()
    private var ackedCount = 0
    private var stopping = false
    private let port: Int
    private let admin: String
    private let namespace: String
    private var thread: Thread?

    init(port: Int, admin: String, namespace: String) {
        self.port = port
        self.admin = admin
        self.namespace = namespace
    }

    var acked: Int { lock.withLock { ackedCount } }

    func start() {
        let thread = Thread { [self] in
            let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 20)
            var next = 0
            while !lock.withLock({ stopping }) {
                guard let response = try? client.request(
                    "PUT", "/w/\(next).json?ns=\(namespace)&print=silent",
                    headers: [("Authorization", "Bearer \(admin)")], body: Array("\(next)".utf8)),
                    response.status == 200 || response.status == 204
                else { break }
                next += 1
                lock.withLock {
                    ackedCount = next
                    lock.broadcast()
                }
            }
        }
        self.thread = thread
        thread.start()
    }

    func wait(forAcked count: Int, timeout: TimeInterval = 60) {
        let deadline = Date().addingTimeInterval(timeout)
        lock.withLock {
            while ackedCount < count && lock.wait(until: deadline) {}
        }
    }

    func stop() { lock.withLock { stopping = true } }
}

/// Starts the built binary without waiting for it.
private func launchCanopy(_ arguments: [String]) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: canopyBinaryPath())
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
}

/// Waits until a file whose name starts with `prefix` appears in `directory`.
private func waitForFile(prefixed prefix: String, in directory: String, timeout: TimeInterval = 20) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        if names.contains(where: { $0.hasPrefix(prefix) }) { return true }
        usleep(20_000)
    }
    return false
}

private func names(in directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
}

@Suite struct BackupTests {
    let dir = makeTemporaryDirectory()
    var data: String { dir + "/data" }
    var out: String { dir + "/backups" }

    func remote(_ server: ServerProcess) -> [String] {
        ["--url", "http://127.0.0.1:\(server.port)", "--token", server.admin]
    }

    func read(_ server: ServerProcess, _ namespace: String) throws -> JSONValue? {
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 20)
        return try client.json("GET", "/.json?ns=\(namespace)", headers: [("Authorization", "Bearer \(server.admin)")]).json
    }

    func put(_ server: ServerProcess, _ namespace: String, _ path: String, _ body: String) throws {
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 20)
        let answer = try client.json(
            "PUT", "\(path.isEmpty ? "/" : path).json?ns=\(namespace)", body, headers: [("Authorization", "Bearer \(server.admin)")])
        #expect(answer.status == 200)
    }

    /// The only manifest in `out`, parsed, and its backup file's path.
    func onlyBackup() throws -> (BackupManifest, String) {
        let manifests = names(in: out).filter { $0.hasSuffix(".json") }
        try #require(manifests.count == 1, "\(names(in: out))")
        let manifest = try BackupManifest.parse(Array(FileManager.default.contents(atPath: out + "/" + manifests[0])!))
        #expect(manifests[0] == manifest.manifestName)
        return (manifest, out + "/" + manifest.fileName)
    }

    @Test(.timeLimit(.minutes(3))) func aBackupUnderContinuousWritesHoldsEveryAcknowledgedWriteAndNothingTorn() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ServerProcess(dataDirectory: data)
        defer { server.terminate() }
        // A tree of some size first, so that the snapshot takes a while.
        let big = "{" + (0..<2000).map { "\"k\($0)\":\"\(String(repeating: "x", count: 100))\"" }.joined(separator: ",") + "}"
        try put(server, "live", "/big", big)
        let writer = ContinuousWriter(port: server.port, admin: server.admin, namespace: "live")
        writer.start()
        writer.wait(forAcked: 30)
        let ackedBefore = writer.acked
        let backup = try runCanopy(["backup", "--ns", "live", "--out", out] + remote(server))
        let ackedAfter = writer.acked
        writer.wait(forAcked: ackedAfter + 10)  // the writes went on
        writer.stop()
        #expect(backup.status == 0, "\(backup.stderr)")
        let (manifest, file) = try onlyBackup()
        #expect(manifest.namespace == "live")
        #expect(file.hasSuffix("live-\(manifest.sha256).canopy"))
        let bytes = Array(FileManager.default.contents(atPath: file)!)
        #expect(Hash.sha256Hex(bytes) == manifest.sha256 && bytes.count == manifest.bytes)
        // Not torn: SQLite's integrity check passes, and the manifest's last commit is the file's.
        let checked = try StoreBackup.check(fileAt: file)
        #expect(checked.lastCommit == manifest.lastCommit)

        let restored = try runCanopy(["restore", "--from", file, "--ns", "copy"] + remote(server))
        #expect(restored.status == 0, "\(restored.stderr)")
        let copy = try read(server, "copy")
        // Keys 0..<n come back as a JSON array (Firebase's array coercion), sparse ones as an object.
        let written: Set<Int> =
            if let array = copy?["w"]?.arrayValue {
                Set(array.indices.filter { !array[$0].isNull })
            } else {
                Set((copy?["w"]?.members ?? []).compactMap { Int($0.key) })
            }
        // Every write acknowledged before the backup started is in it; the writes form a prefix (one commit
        // boundary: no later write without every earlier one).
        #expect(written.count >= ackedBefore)
        #expect(written == Set(0..<written.count))
        #expect(written.count <= ackedAfter + 1)
        #expect(copy?["big"]?.members?.count == 2000)
    }

    @Test(.timeLimit(.minutes(2))) func aRestoreServesExactlyTheBackupAndListenersGetIt() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var server = try ServerProcess(dataDirectory: data)
        defer { if server.process.isRunning { server.terminate() } }  // whichever daemon runs when the test ends
        try put(server, "ev", "", #"{"a":{"x":1},"b":"keep"}"#)
        #expect(try runCanopy(["backup", "--ns", "ev", "--out", out] + remote(server)).status == 0)
        let (manifest, file) = try onlyBackup()
        try put(server, "ev", "", #"{"a":{"x":2},"c":"new"}"#)

        let stream = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 5)
        let head = try stream.openStream(
            "/.json?ns=ev", headers: [("Authorization", "Bearer \(server.admin)"), ("Accept", "text/event-stream")])
        #expect(head.status == 200)
        #expect(readEvents(stream, until: "\n\n").contains("\"new\""))

        let restored = try runCanopy(["restore", "--from", out + "/" + manifest.manifestName] + remote(server))
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(restored.stdout.contains("last commit \(manifest.lastCommit)"))
        #expect(try read(server, "ev") == ["a": ["x": 1], "b": "keep"])
        // The listener is told what differs: the restored values arrive.
        let events = readEvents(stream, until: "keep")
        #expect(events.contains("keep"), "\(events)")
        #expect(!names(in: data).contains { $0.contains(".restore-") })

        // The restored file is the namespace's store from now on: writes go on, and survive a restart.
        try put(server, "ev", "/d", "1")
        server.terminate()
        server = try ServerProcess(dataDirectory: data)
        #expect(try read(server, "ev") == ["a": ["x": 1], "b": "keep", "d": 1])
        _ = file
    }

    @Test(.timeLimit(.minutes(2))) func truncatedAlteredOrWrongVersionBackupsAreRefusedAndChangeNothing() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ServerProcess(dataDirectory: data)
        defer { server.terminate() }
        let many = "{" + (0..<300).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}"
        try put(server, "ev", "/old", many)
        #expect(try runCanopy(["backup", "--ns", "ev", "--out", out] + remote(server)).status == 0)
        let (manifest, file) = try onlyBackup()
        try put(server, "ev", "", #"{"v":"live"}"#)
        let original = Array(FileManager.default.contents(atPath: file)!)

        func attempt(_ bytes: [UInt8], _ manifestText: String) throws -> (status: Int32, stderr: String) {
            let copies = dir + "/bad-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: copies, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: copies + "/" + manifest.fileName, contents: Data(bytes))
            _ = FileManager.default.createFile(atPath: copies + "/" + manifest.manifestName, contents: Data(manifestText.utf8))
            let result = try runCanopy(["restore", "--from", copies + "/" + manifest.fileName] + remote(server))
            return (result.status, result.stderr)
        }
        var altered = original
        altered[altered.count / 2] ^= 0xFF
        let wrongVersion = manifest.serialized().replacingOccurrences(of: "\"formatVersion\":1", with: "\"formatVersion\":2")
        let cases: [(String, [UInt8], String, String)] = [
            ("truncated", Array(original.prefix(original.count / 2)), manifest.serialized(), "truncated or altered"),
            ("altered", altered, manifest.serialized(), "truncated or altered"),
            ("wrong version", original, wrongVersion, "format version 2"),
        ]
        for (label, bytes, manifestText, message) in cases {
            let result = try attempt(bytes, manifestText)
            #expect(result.status != 0, "\(label)")
            #expect(result.stderr.contains(message) && result.stderr.contains("nothing was changed"), "\(label): \(result.stderr)")
        }

        // The daemon checks for itself, whatever the client claims: a truncated or foreign file sent with its own
        // hash, a wrong format version, a hash that does not match.
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 20)
        func post(_ body: [UInt8], format: String = "1", sha: String? = nil) throws -> (Int, String) {
            let response = try client.request(
                "POST", "/.canopy/restore?ns=ev",
                headers: [
                    ("Authorization", "Bearer \(server.admin)"), ("X-Canopy-Backup-Format", format),
                    ("X-Canopy-SHA256", sha ?? Hash.sha256Hex(body)),
                ], body: body)
            return (response.status, (try? JSONValue.parse(response.body))?["error"]?.stringValue ?? response.text)
        }
        let truncated = Array(original.prefix(original.count / 2))
        let refusals = [
            try post(truncated), try post(Array("not a database at all".utf8)),
            try post(original, format: "2"), try post(original, sha: Hash.sha256Hex(altered)),
        ]
        for (status, message) in refusals {
            #expect(status == 400, "\(message)")
            #expect(message.contains("nothing was changed"), "\(message)")
        }
        // Without the admin credential, no restore.
        #expect(try client.request("POST", "/.canopy/restore?ns=ev", body: original).status == 403)

        #expect(try read(server, "ev") == ["v": "live"])
        #expect(!names(in: data).contains { $0.contains(".restore-") || $0.hasPrefix(".backup-") }, "\(names(in: data))")
    }

    @Test func aBackupDirectoryThatCannotBeWrittenFailsBeforeAnythingIsCopied() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ServerProcess(dataDirectory: data)
        defer { server.terminate() }
        try put(server, "ev", "/a", "1")
        // Root may write anywhere on a normal file system: /proc refuses new files even to root.
        let readOnly = try runCanopy(["backup", "--ns", "ev", "--out", "/proc"] + remote(server))
        #expect(readOnly.status != 0)
        #expect(readOnly.stderr.contains("is not writable: nothing was copied"), "\(readOnly.stderr)")
        let file = dir + "/a-file"
        _ = FileManager.default.createFile(atPath: file, contents: Data())
        let notDirectory = try runCanopy(["backup", "--all", "--out", file] + remote(server))
        #expect(notDirectory.status != 0)
        #expect(notDirectory.stderr.contains("not a directory: nothing was copied"), "\(notDirectory.stderr)")
        let unknown = try runCanopy(["backup", "--ns", "absent", "--out", out] + remote(server))
        #expect(unknown.status != 0)
        #expect(unknown.stderr.contains("has no data to back up"), "\(unknown.stderr)")
        #expect(names(in: out).isEmpty)
    }

    @Test(.timeLimit(.minutes(2))) func kill9DuringARestoreLeavesTheOldStateWhole() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var server = try ServerProcess(
            dataDirectory: data, environment: ["CANOPY_TEST_PAUSE": "restore-before-rename:5000"])
        defer { if server.process.isRunning { server.terminate() } }  // whichever daemon runs when the test ends
        try put(server, "ev", "", #"{"v":"old"}"#)
        #expect(try runCanopy(["backup", "--ns", "ev", "--out", out] + remote(server)).status == 0)
        let (_, file) = try onlyBackup()
        try put(server, "ev", "", #"{"v":"live","w":[1,2,3]}"#)

        let restore = try launchCanopy(["restore", "--from", file] + remote(server))
        #expect(waitForFile(prefixed: ".ev.restore-", in: data))
        usleep(500_000)  // past the checks and the close of the live store: in the pause before the rename
        server.kill9()
        restore.waitUntilExit()
        #expect(restore.terminationStatus != 0)

        server = try ServerProcess(dataDirectory: data)
        #expect(try read(server, "ev") == ["v": "live", "w": [1, 2, 3]])
        try put(server, "ev", "/x", "1")
        server.terminate()

        // Offline, into the stopped daemon's directory (the leftover temporary file is ignored).
        let offline = try runCanopy(["restore", "--from", file, "--offline", "--data", data])
        #expect(offline.status == 0, "\(offline.stderr)")
        server = try ServerProcess(dataDirectory: data)
        #expect(try read(server, "ev") == ["v": "old"])
        let refused = try runCanopy(["restore", "--from", file, "--offline", "--data", data])
        #expect(refused.stderr.contains("in use by a running daemon"))
    }

    @Test(.timeLimit(.minutes(2))) func kill9DuringABackupLeavesTheStoreWholeAndNoBackup() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var server = try ServerProcess(dataDirectory: data, environment: ["CANOPY_TEST_PAUSE": "backup-after-copy:5000"])
        defer { if server.process.isRunning { server.terminate() } }  // whichever daemon runs when the test ends
        try put(server, "ev", "", #"{"v":"live"}"#)
        let backup = try launchCanopy(["backup", "--ns", "ev", "--out", out] + remote(server))
        #expect(waitForFile(prefixed: ".backup-", in: data))
        usleep(200_000)
        server.kill9()
        backup.waitUntilExit()
        #expect(backup.terminationStatus != 0)
        #expect(!names(in: out).contains { $0.hasSuffix(".canopy") || $0.hasSuffix(".json") }, "\(names(in: out))")

        server = try ServerProcess(dataDirectory: data)
        #expect(try read(server, "ev") == ["v": "live"])
        #expect(try runCanopy(["backup", "--ns", "ev", "--out", out] + remote(server)).status == 0)
        #expect(try onlyBackup().0.namespace == "ev")
    }
}
