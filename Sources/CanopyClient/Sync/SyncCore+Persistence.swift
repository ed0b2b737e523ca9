// SyncCore+Persistence -- loading the cache and write queue at start, and flushing cached server values.

import CanopyCore
import Foundation

extension SyncCore {
    /// Loads cached server values and queued writes: the local view starts as cache + queue. Queue only (the
    /// one SQLite read the sync queue waits for, while the client is being created).
    func loadPersistentState() throws(ClientError) {
        guard let storeWriter else { return }
        let (cacheRows, writeRows) = try storeWriter.load()
        cache.load(cacheRows)
        for row in writeRows {
            guard let path = try? Path(parsing: row.path), let wire = try? JSONValue.parse(row.data),
                let change = try? resolve(wire, at: path, merge: row.action == Wire.Action.merge)
            else {
                writes.skip(row.id)
                storeWriter.remove(row.id)
                continue
            }
            var write = UserWrite(id: row.id, path: path, change: change, wire: wire)
            write.sent = row.sent
            if write.sent && write.containsIncrement {
                // Sent by an earlier run and never acknowledged: it may have applied; never send it twice.
                logger.warning("client.increment_dropped", ["path": path.description])
                writes.skip(row.id)
                storeWriter.remove(row.id)
                continue
            }
            writes.restore(write)
        }
    }

    /// Notes that a listen's server value changed; it is written to the cache file shortly.
    func markDirty(_ key: ListenKey) {
        guard storeWriter != nil, listens[key] != nil || cache.known.contains(key) else { return }
        _ = cache.markDirty(key)
        guard !isCacheFlushScheduled else { return }
        isCacheFlushScheduled = true
        queue.asyncAfter(deadline: .now() + options.cacheFlushDelay) { [weak self] in self?.flushCache() }
    }

    /// Submits every changed cached value to the store writer, as one transaction. Queue only.
    func flushCache() {
        isCacheFlushScheduled = false
        guard let storeWriter else { return }
        let rows = cache.takeDirty().filter { cache.known.contains($0) || listens[$0]?.complete == true }
            .map { LocalCache.row($0, view: serverView($0)) }
        storeWriter.saveCache(rows)
    }
}
