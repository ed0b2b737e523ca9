// SyncCore+Persistence -- loading the cache and write queue at start, and flushing cached server values.

import CanopyCore
import Foundation

extension SyncCore {
    /// Loads cached server values and queued writes: the local view starts as cache + queue. Queue only.
    func loadPersistentState() throws(ClientError) {
        guard let store else { return }
        var defaults: [(Path, Node)] = []
        for row in try store.loadCache() {
            guard let path = try? Path(parsing: row.path), let json = try? JSONValue.parse(row.data),
                let node = try? Node.from(json: json, at: path)
            else { continue }
            if row.query.isEmpty {
                defaults.append((path, node))
                known.insert(ListenKey(path: path, query: nil))
            } else if let q = try? JSONValue.parse(row.query), let spec = try? QuerySpec.fromWire(q) {
                let key = ListenKey(path: path, query: spec)
                queryViews[key] = node
                known.insert(key)
            }
        }
        // Shallow locations first, so a deeper (separately listened) location keeps its own saved value.
        for (path, node) in defaults.sorted(by: { $0.0.count < $1.0.count }) {
            serverTree = serverTree.setting(node, at: path)
        }
        for row in try store.loadWrites() {
            nextWriteID = max(nextWriteID, row.id + 1)
            guard let path = try? Path(parsing: row.path), let wire = try? JSONValue.parse(row.data),
                let change = try? resolve(wire, at: path, merge: row.action == "m")
            else {
                try? store.removeWrite(row.id)
                continue
            }
            var write = UserWrite(id: row.id, path: path, change: change, wire: wire)
            write.sent = row.sent
            if write.sent && write.containsIncrement {
                // Sent by an earlier run and never acknowledged: it may have applied; never send it twice.
                logger.warning("client.increment_dropped", ["path": path.description])
                try? store.removeWrite(row.id)
                continue
            }
            writes.append(write)
        }
    }

    /// Notes that a listen's server value changed; it is written to the cache file shortly.
    func markDirty(_ key: ListenKey) {
        guard store != nil, listens[key] != nil || known.contains(key) else { return }
        dirty.insert(key)
        guard !flushScheduled else { return }
        flushScheduled = true
        queue.asyncAfter(deadline: .now() + options.cacheFlushDelay) { [weak self] in self?.flushCache() }
    }

    /// Writes every changed cached value in one transaction. Queue only.
    func flushCache() {
        flushScheduled = false
        guard let store, !dirty.isEmpty else { return }
        var keys = dirty
        dirty = []
        // Rows of cached locations below a changed one are rewritten too, so no older row below a newer one
        // survives (loading applies deeper rows last).
        for key in keys where key.query == nil {
            for other in known where other.query == nil && key.path.isAncestor(of: other.path) { keys.insert(other) }
        }
        var rows: [CachedValue] = []
        for key in keys where known.contains(key) || listens[key]?.complete == true {
            let query = key.query.map { $0.wireObject().serialized() } ?? ""
            rows.append(
                CachedValue(
                    path: key.path.description, query: query,
                    data: (key.query.map { $0.window(of: serverView(key)) } ?? serverView(key)).json(export: true).serialized()))
        }
        do { try store.saveCache(rows) } catch { logger.error("client.cache_write_failed", ["reason": error.userMessage]) }
    }
}
