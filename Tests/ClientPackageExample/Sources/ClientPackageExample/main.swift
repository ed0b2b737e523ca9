// main -- an app's first steps with CanopyClient, against a running server: write, listen, go offline, restart.
//
// Usage: ClientPackageExample <server URL> <admin credential>. Prints one line per step and exits 0 when every
// step saw what it expected (1 otherwise). Only the library's public API is used: `import CanopyClient`.

import CanopyClient
import Foundation

/// Fails the program with a message.
func check(_ condition: Bool, _ step: String) {
    print(condition ? "ok   \(step)" : "FAIL \(step)")
    if !condition { exit(1) }
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let url = URL(string: arguments[1]) else {
    print("usage: ClientPackageExample <server URL> <admin credential>")
    exit(64)
}
let token = arguments[2]
let namespace = "example-\(UUID().uuidString.prefix(8).lowercased())"
let cache = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-example-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: cache) }

do {
    let db = try Database(url: url, namespace: namespace, token: token, cacheDirectory: cache)
    let room = db.ref("rooms").childByAutoId()
    try await room.setValue(["title": "Lobby", "order": 1]).synced()
    check(try await room.child("title").getValue().value == "Lobby", "a write is acknowledged and read back")

    var updates = db.ref("rooms").orderByChild("order").limitToLast(1).values.makeAsyncIterator()
    _ = try await updates.next()
    db.ref("rooms/zz").setValue(["title": "Hall", "order": 2])
    check(try await updates.next()?.children.first?.key == "zz", "a listener sees a local write at once")

    db.goOffline()
    let queued = db.ref("rooms/zz/title").setValue("Queued while offline")
    await queued.saved()
    check(db.pendingWriteCount >= 1, "a write made offline is queued and saved")
    await db.close()

    // The app restarts: the queued write is in the cache file and reaches the server on connect.
    let restarted = try Database(url: url, namespace: namespace, token: token, cacheDirectory: cache)
    check(restarted.pendingWriteCount >= 1, "the queue survives a restart")
    for await count in restarted.pendingWriteCounts where count == 0 { break }
    let other = try Database(url: url, namespace: namespace, token: token)
    check(
        try await other.ref("rooms/zz/title").getValue().value == "Queued while offline",
        "the queued write reached the server")
    await other.close()
    await restarted.close()
} catch {
    print("FAIL \(error)")
    exit(1)
}
