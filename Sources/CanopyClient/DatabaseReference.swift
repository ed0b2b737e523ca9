// DatabaseReference -- a location: navigation, writes, transactions, onDisconnect (and every query method).

import CanopyCore

/// A location in the database.
public struct DatabaseReference: DatabaseQueryable {
    /// The database this location belongs to (kept alive by every reference, query and stream).
    public let database: Database
    let location: Path
    var core: SyncCore { database.core }

    init(database: Database, path: Path) {
        self.database = database
        location = path
    }

    public var query: DatabaseQuery { DatabaseQuery(database: database, location: location, spec: .default) }

    /// The last key (nil at the root).
    public var key: String? { location.lastKey }
    /// The location, `/a/b` (`/` for the root).
    public var path: String { location.description }
    /// The parent location (nil at the root).
    public var parent: DatabaseReference? { location.parent.map { DatabaseReference(database: database, path: $0) } }
    /// The root location.
    public var root: DatabaseReference { DatabaseReference(database: database, path: .root) }

    /// The location `path` (relative, may contain `/`) below this one. An invalid path stops the program.
    public func child(_ path: String) -> DatabaseReference {
        let relative = Database.parse(path)
        return DatabaseReference(database: database, path: location.appending(relative))
    }

    /// A new child with a push id: chronologically ordered (server-time based) and unique.
    public func childByAutoId() -> DatabaseReference {
        DatabaseReference(database: database, path: location.child(core.pushIDs.next()))
    }

    /// Replaces the value here (`.null` deletes); applied locally at once, then synced.
    @discardableResult
    public func setValue(_ value: JSONValue) -> PendingWrite {
        PendingWrite(id: core.sync { core.write(at: location, wire: value, merge: false) }, database: database)
    }

    /// Sets several relative paths (keys may contain `/`) atomically; `.null` values delete.
    @discardableResult
    public func updateChildValues(_ values: [String: JSONValue]) -> PendingWrite {
        let members = values.sorted { $0.key < $1.key }.map { JSONMember($0.key, $0.value) }
        return PendingWrite(id: core.sync { core.write(at: location, wire: .object(members), merge: true) }, database: database)
    }

    /// Deletes the value here.
    @discardableResult
    public func removeValue() -> PendingWrite { setValue(.null) }

    /// Operations the server applies when this client's connection ends.
    public func onDisconnect() -> OnDisconnect { OnDisconnect(database: database, location: location) }
}
