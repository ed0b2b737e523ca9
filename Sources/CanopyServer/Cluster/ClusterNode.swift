// ClusterNode -- one Canopy node's membership of a cluster on NATS JetStream (Cluster.md).
//
// It keeps the node's lease in the `canopy_nodes` bucket (renewed every lease/4 with `update` at the revision it
// last wrote), knows the live nodes and the owner of every claimed namespace, claims namespaces (the owner record
// in `canopy_owners`, the log replayed, the takeover marker published with the fence), and notices namespaces
// whose owner died, claiming those whose preferred live owner it is. Everything here blocks on NATS: it runs on
// the node's own threads and on the claim queue, never on the event loop, which hears back through callbacks.

import CanopyCore
import CanopyNATS
import CanopyNet
import Dispatch
import Synchronization

/// Where a node finds NATS, what it calls itself and the address clients reach it at (`canopy serve --cluster`).
public struct ClusterConfiguration: Sendable {
    public var servers: [NATSServerAddress]
    /// `--node`: unique in the cluster; a second live process with the same name is refused.
    public var node: String
    /// `--advertise`: the URL clients reach this node at (`http://host:port`); redirects name its host and port.
    public var advertise: String
    /// How long a node's lease lives without renewal (its namespaces move after it); renewed every quarter.
    public var leaseMilliseconds = 6_000
    /// Whether `leaseMilliseconds` was given (`--lease`): a node that was not told adopts the cluster's lease
    /// (`canopy_cluster/config`); one told another lease than the cluster's refuses to join.
    public var leaseIsExplicit = false
    /// Log streams `CANOPY_LOG_<k>`; fixed when the cluster is created (`canopy_cluster/config`).
    public var logStreams = 8
    /// Copies of every stream and bucket (3: losing one NATS server loses nothing).
    public var replicas = 3
    /// REST and SSE requests for a namespace another node owns are proxied to it (true, `--cluster-rest proxy`,
    /// the default) or answered with `307` to it (`--cluster-rest redirect`).
    public var proxiesREST = true
    /// `--replicate`: a node serves namespaces other nodes own from a replica (reads and listens here, writes
    /// forwarded to the owner) instead of sending their clients to the owner.
    public var replicates = false
    /// `--replicate-above`: without `--replicate`, a node serves a namespace another node owns from a replica
    /// once the cluster's nodes report more than this many clients of it (wire sessions and event streams, read
    /// from their leases), while this node has fewer than `replicaConnectionBudget` connections; below that its
    /// clients are sent to the owner (Cluster.md#How-a-client-reaches-its-node). Nil: never by load.
    public var replicateAbove: Int? = 2_000
    /// Connections above which a node opens no new replica by load (80 % of `--max-connections`).
    public var replicaConnectionBudget = 8_000
    /// `--snapshot-batches`: an owner snapshots a namespace after this many log messages since its last snapshot
    /// (0: never by count), and trims the log below the snapshot before (Cluster.md#Snapshots).
    public var snapshotBatches = 10_000
    /// `--snapshot-log-mib`: … or after this many bytes of log messages (0: never by size).
    public var snapshotBytes = 64 << 20

    public init(servers: [NATSServerAddress], node: String, advertise: String) {
        self.servers = servers
        self.node = node
        self.advertise = advertise
    }

    /// The advertised address without its scheme and path (`host:port`), as a wire redirect names it.
    public var advertisedHost: String { Self.host(of: advertise) }

    public static func host(of url: String) -> String {
        var text = Substring(url)
        if let range = text.range(of: "://") { text = text[range.upperBound...] }
        if let slash = text.firstIndex(of: "/") { text = text[..<slash] }
        return String(text)
    }

    /// Node names are KV keys and subject tokens: 1 to 63 letters, digits, `_` or `-`.
    static func isValidNodeName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 63
            && name.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x5F || $0 == 0x2D }
    }
}

/// Why a cluster operation failed.
public struct ClusterError: CanopyError {
    public let userMessage: String
    public var code: String { "cluster" }
    public var description: String { "ClusterError: \(userMessage)" }
    init(_ message: String) { userMessage = message }
}

/// The result of claiming a namespace.
enum ClaimOutcome {
    /// Another live node owns it, or is its preferred owner: clients go there.
    case elsewhere(url: String, node: String)
    /// This node owns it now: its tree and rules as the log holds them, and the log to append to.
    case owned(tree: Node, rules: String?, log: NamespaceLog)
}

/// One node of the cluster. Thread-safe.
final class ClusterNode: @unchecked Sendable {
    // safe: mutable state is behind `state`; the NATS objects are thread-safe.
    let configuration: ClusterConfiguration
    let connection: NATSConnection
    let js: JetStream
    private let nodes: KeyValue
    private let owners: KeyValue
    /// onDisconnect operations queued by the sessions of replicas (`<ns>.<incarnation>.<session>`), so that the
    /// owner performs them if the replica's process dies (Cluster.md#Writes-at-a-replica).
    let disconnects: KeyValue
    /// This process in the cluster: its node name and a random suffix, in its lease. A lease that disappears or
    /// names another incarnation means the process that wrote the keys under the old one is gone.
    let incarnation: String
    let logger = Logger(label: "canopy.cluster")

    private struct State {
        /// The revision of this node's lease as last written; 0 while not registered.
        var leaseRevision: UInt64 = 0
        /// Monotonic nanoseconds until which the lease is valid here (sent time + lease - one renewal period).
        var leaseValidUntil: UInt64 = 0
        /// Live nodes and their advertised URLs, as last polled.
        var live: [String: String] = [:]
        /// The incarnation each live node's lease names, as last polled.
        var incarnations: [String: String] = [:]
        /// Every namespace's owner node, from the owners bucket's watch.
        var owners: [String: String] = [:]
        /// Namespaces this node claimed and holds (their logs).
        var held: [String: NamespaceLog] = [:]
        /// Clients per namespace on every other live node, from their leases (`--replicate-above`).
        var load: [String: [String: Int]] = [:]
        /// Clients per namespace served here, and this node's connections, as the loop last reported them.
        var localLoad: [String: Int] = [:]
        var localConnections = 0
        /// Namespaces handed to `onOrphan` and not yet claimed or given up (not offered twice).
        var offered: Set<String> = []
        var stopped = false
    }
    private let state = Mutex(State())
    /// Claims run here: they block on NATS (and on the first write of the claimed tree to its cache file).
    let claimQueue = DispatchQueue(label: "canopy.cluster.claim", attributes: .concurrent)
    /// Snapshots are encoded and published here, one at a time for the whole node (Cluster.md#Snapshots).
    let snapshotQueue = DispatchQueue(label: "canopy.cluster.snapshot")

    /// Called (on a cluster thread) when this node lost its lease: everything it holds must stop at once.
    var onLeaseLost: (@Sendable () -> Void)?
    /// Called (on a cluster thread) with a namespace whose owner died and of which this node is the preferred
    /// live owner: the daemon claims it (loads it) without waiting for a client.
    var onOrphan: (@Sendable (String) -> Void)?
    /// Called (on a cluster thread) with the onDisconnect operations that sessions of a dead process's replicas
    /// left for a namespace this node owns: the daemon performs them, then removes their keys.
    var onOrphanedDisconnects: (@Sendable (String, [StoredDisconnects]) -> Void)?
    /// Stores and removes replicas' onDisconnect keys, in order.
    let disconnectQueue = DispatchQueue(label: "canopy.cluster.ondisconnect")

    var name: String { configuration.node }
    var leaseNanoseconds: UInt64 { UInt64(configuration.leaseMilliseconds) * 1_000_000 }
    var renewalNanoseconds: UInt64 { leaseNanoseconds / 4 }

    /// Connects, creates the cluster's streams and buckets (idempotent) and registers the node's lease.
    /// - Throws: `ClusterError` or the NATS error when NATS cannot be reached or another live node has this name.
    init(configuration: ClusterConfiguration) throws {
        guard ClusterConfiguration.isValidNodeName(configuration.node) else {
            throw ClusterError("invalid node name '\(configuration.node)': use 1 to 63 letters, digits, '_' or '-'")
        }
        var configuration = configuration
        var options = NATSOptions(servers: configuration.servers)
        options.name = "canopy-" + configuration.node
        options.reconnectTimeout = .seconds(8)
        let connection = try NATSConnection(options: options)
        let js = JetStream(connection, timeout: .seconds(4))
        self.connection = connection
        self.js = js
        incarnation = configuration.node + "-" + RandomToken.alphanumeric(12)
        let replicas = configuration.replicas
        let stored = try Self.retrying(for: .seconds(20)) { try Self.storedConfiguration(js, mine: configuration) }
        let shared = try Self.agreed(configuration, stored)
        configuration.leaseMilliseconds = shared.leaseMilliseconds
        self.configuration = configuration
        let lease = Duration.milliseconds(configuration.leaseMilliseconds)
        let logStreams = configuration.logStreams
        (nodes, owners, disconnects) = try Self.retrying(for: .seconds(20)) {
            let nodes = try KeyValue.create(js, bucket: "canopy_nodes", history: 1, ttl: lease, replicas: replicas)
            let owners = try KeyValue.create(js, bucket: "canopy_owners", history: 1, replicas: replicas)
            let disconnects = try KeyValue.create(js, bucket: Self.disconnectBucket, history: 1, replicas: replicas)
            for k in 0..<logStreams {
                var config = JetStreamStreamConfig(
                    name: Self.streamName(k), subjects: ["canopy.log.\(k).*"], replicas: replicas)
                config.allowDirect = true
                config.duplicateWindow = .seconds(120)
                _ = try js.createStream(config)
            }
            _ = try js.createStream(Self.snapshotStreamConfig(replicas: replicas))
            return (nodes, owners, disconnects)
        }
        try register()
    }

    /// What every node of a cluster must agree on, kept in `canopy_cluster/config` by the first node that joined.
    struct SharedConfiguration: Equatable {
        var leaseMilliseconds: Int
        var logStreams: Int
        var replicas: Int

        var json: JSONValue {
            .object([
                JSONMember("v", .int(1)), JSONMember("leaseMs", .int(Int64(leaseMilliseconds))),
                JSONMember("logStreams", .int(Int64(logStreams))), JSONMember("replicas", .int(Int64(replicas))),
            ])
        }

        init(leaseMilliseconds: Int, logStreams: Int, replicas: Int) {
            self.leaseMilliseconds = leaseMilliseconds
            self.logStreams = logStreams
            self.replicas = replicas
        }

        init?(_ bytes: [UInt8]) {
            guard let json = try? JSONValue.parse(bytes), json["v"]?.int64Value == 1,
                let lease = json["leaseMs"]?.int64Value, let streams = json["logStreams"]?.int64Value,
                let replicas = json["replicas"]?.int64Value
            else { return nil }
            self.init(leaseMilliseconds: Int(lease), logStreams: Int(streams), replicas: Int(replicas))
        }

        var description: String { "lease \(leaseMilliseconds) ms, \(logStreams) log streams, \(replicas) replicas" }
    }

    /// This node's configuration as the cluster shares it.
    static func shared(_ configuration: ClusterConfiguration) -> SharedConfiguration {
        SharedConfiguration(
            leaseMilliseconds: configuration.leaseMilliseconds, logStreams: configuration.logStreams,
            replicas: configuration.replicas)
    }

    /// The cluster's shared configuration, created from this node's when it is the first to join.
    /// - Throws: `ClusterError` when the stored record cannot be read, or NATS's error.
    static func storedConfiguration(_ js: JetStream, mine configuration: ClusterConfiguration) throws
        -> SharedConfiguration
    {
        let bucket = try KeyValue.create(js, bucket: "canopy_cluster", history: 1, replicas: configuration.replicas)
        let mine = shared(configuration)
        var text: [UInt8] = []
        mine.json.write(into: &text)
        do {
            _ = try bucket.create("config", text)
            return mine
        } catch KeyValueError.keyExists {
            guard let entry = try bucket.entry("config"), let stored = SharedConfiguration(entry.value) else {
                throw ClusterError("canopy_cluster/config in NATS is not a configuration this version can read")
            }
            return stored
        }
    }

    /// What this node runs with: the cluster's configuration, which must be its own, except for a lease it was
    /// not told (`--lease`), which it adopts.
    /// - Throws: `ClusterError` naming both when they differ.
    static func agreed(_ configuration: ClusterConfiguration, _ stored: SharedConfiguration) throws
        -> SharedConfiguration
    {
        let mine = shared(configuration)
        var wanted = mine
        if !configuration.leaseIsExplicit { wanted.leaseMilliseconds = stored.leaseMilliseconds }
        guard wanted == stored else {
            throw ClusterError(
                "this node's settings (\(mine.description)) differ from the cluster's (\(stored.description), in "
                    + "canopy_cluster/config since its first node joined): start it with --lease "
                    + "\(stored.leaseMilliseconds), or without --lease to take the cluster's")
        }
        return stored
    }

    /// Starts the lease renewal and the watch of nodes and owners.
    func start() {
        // Each loop holds one dispatch thread for the node's lifetime.
        DispatchQueue(label: "canopy.cluster.lease").async { [weak self] in self?.renewLoop() }
        DispatchQueue(label: "canopy.cluster.watch").async { [weak self] in self?.watchLoop() }
    }

    func stop() {
        let held: [NamespaceLog] = state.withLock { state in
            state.stopped = true
            return Array(state.held.values)
        }
        for log in held { log.close() }
        // Leaving on purpose: the lease goes now, so the namespaces move without waiting for it to expire.
        let revision = state.withLock { $0.leaseRevision }
        if revision > 0 { _ = try? nodes.delete(name, revision: revision) }
        connection.close()
    }

    // MARK: - Names

    static func streamName(_ k: Int) -> String { "CANOPY_LOG_\(k)" }

    /// The log stream and subject of a namespace.
    func log(of namespace: String) -> (stream: String, subject: String) {
        Self.log(of: namespace, streams: configuration.logStreams)
    }

    static func log(of namespace: String, streams: Int) -> (stream: String, subject: String) {
        let k = Int(fnv1a(namespace) % UInt64(streams))
        return (streamName(k), "canopy.log.\(k).\(namespace)")
    }

    /// FNV-1a 64: stable across processes and versions (Swift's `Hasher` is seeded per process).
    static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        // A final mix, so names that differ in their last byte spread over the whole range.
        hash ^= hash >> 33
        hash = hash &* 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        return hash
    }

    /// The live node with the highest rendezvous weight for `namespace` (Cluster.md#Placement).
    static func preferredOwner(of namespace: String, among nodes: some Sequence<String>) -> String? {
        nodes.max { fnv1a(namespace + "|" + $0) < fnv1a(namespace + "|" + $1) }
    }

    // MARK: - Lease

    /// At most this many namespaces' client counts go in a lease (the busiest).
    static let loadEntriesPerLease = 256

    /// The lease's value: the advertised URL and, with `--replicate-above`, the busiest namespaces this node
    /// serves with their clients.
    private var leaseValue: [UInt8] {
        var members = [JSONMember("url", .string(configuration.advertise)), JSONMember("inc", .string(incarnation))]
        if configuration.replicateAbove != nil {
            let load = state.withLock { $0.localLoad }
            let busiest = load.filter { $0.value > 0 }.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }
            members.append(
                JSONMember(
                    "load",
                    .object(busiest.prefix(Self.loadEntriesPerLease).map { JSONMember($0.key, .int(Int64($0.value))) })))
        }
        var out: [UInt8] = []
        JSONValue.object(members).write(into: &out)
        return out
    }

    private static func decodeLoad(_ value: [UInt8]) -> [String: Int] {
        guard let load = (try? JSONValue.parse(value))?["load"]?.members else { return [:] }
        var out: [String: Int] = [:]
        for member in load {
            if let count = member.value.int64Value, count > 0 { out[member.key] = Int(clamping: count) }
        }
        return out
    }

    /// The loop's report, once a second: clients per namespace served here and this node's connections. The
    /// next lease renewal carries them to the other nodes.
    func reportLoad(_ clients: [String: Int], connections: Int) {
        state.withLock { state in
            state.localLoad = clients
            state.localConnections = connections
        }
    }

    /// Whether this node serves `namespace`, which another node owns, from a replica: always with
    /// `--replicate`; with `--replicate-above`, while the cluster's nodes report more clients of it than that and
    /// this node is below its connection budget.
    func replicates(_ namespace: String) -> Bool {
        if configuration.replicates { return true }
        guard let above = configuration.replicateAbove else { return false }
        return state.withLock { state in
            guard state.localConnections < configuration.replicaConnectionBudget else { return false }
            var clients = state.localLoad[namespace] ?? 0
            for (node, load) in state.load where node != name && state.live[node] != nil {
                clients += load[namespace] ?? 0
            }
            return clients > above
        }
    }

    /// Whether this node may act as an owner now: its lease was renewed recently enough (local expiry).
    var leaseIsValid: Bool {
        let until = state.withLock { $0.leaseValidUntil }
        return monotonicNanoseconds() < until
    }

    /// Creates this node's lease; a lease of the same name left by a process that died is waited out.
    private func register() throws {
        let deadline = monotonicNanoseconds() + leaseNanoseconds + 4_000_000_000
        while true {
            let sent = monotonicNanoseconds()
            do {
                let revision = try nodes.create(name, leaseValue)
                state.withLock { state in
                    state.leaseRevision = revision
                    state.leaseValidUntil = sent + leaseNanoseconds - renewalNanoseconds
                    state.live[name] = configuration.advertise
                    state.incarnations[name] = incarnation
                }
                logger.notice("cluster.registered", ["node": name, "revision": "\(revision)"])
                return
            } catch KeyValueError.keyExists {
                guard monotonicNanoseconds() < deadline else {
                    throw ClusterError(
                        "another live node is called '\(name)' (its lease in canopy_nodes is being renewed)")
                }
                usleep(250_000)
            }
        }
    }

    private func renewLoop() {
        while !state.withLock({ $0.stopped }) {
            usleep(UInt32(renewalNanoseconds / 1000))
            if state.withLock({ $0.stopped }) { return }
            let revision = state.withLock { $0.leaseRevision }
            let sent = monotonicNanoseconds()
            do {
                if revision == 0 {
                    try register()
                    continue
                }
                let next = try nodes.update(name, leaseValue, revision: revision)
                state.withLock { state in
                    state.leaseRevision = next
                    state.leaseValidUntil = sent + leaseNanoseconds - renewalNanoseconds
                }
            } catch KeyValueError.wrongRevision, KeyValueError.keyExists {
                // The lease expired (this node was paused or cut off) or was replaced: it owns nothing any more.
                loseLease("renewal refused")
            } catch {
                logger.warning("cluster.renew_failed", ["node": name, "error": "\(error)"])
                if !leaseIsValid && state.withLock({ !$0.held.isEmpty }) { loseLease("lease expired locally") }
            }
        }
    }

    private func loseLease(_ reason: String) {
        let held: [NamespaceLog] = state.withLock { state in
            state.leaseRevision = 0
            state.leaseValidUntil = 0
            defer { state.held = [:] }
            return Array(state.held.values)
        }
        logger.error("cluster.lease_lost", ["node": name, "reason": reason, "namespaces": "\(held.count)"])
        for log in held { log.depose(reason: "this node's lease was lost (\(reason))") }
        onLeaseLost?()
    }

    // MARK: - Nodes and owners

    /// Follows the nodes bucket (new nodes) and the owners bucket, and polls every known node's lease once a
    /// second (2.9 announces no TTL expiry); then offers orphaned namespaces this node should own.
    private func watchLoop() {
        var nodeWatch: KeyValueWatcher?
        var ownerWatch: KeyValueWatcher?
        var known: Set<String> = [name]
        while !state.withLock({ $0.stopped }) {
            do {
                if nodeWatch == nil { nodeWatch = try nodes.watch() }
                if ownerWatch == nil { ownerWatch = try owners.watch("ns.*") }
                while let entry = nodeWatch?.next(timeout: .milliseconds(1)) { known.insert(entry.key) }
                while let entry = ownerWatch?.next(timeout: .milliseconds(1)) {
                    let namespace = String(entry.key.dropFirst(3))
                    let owner = entry.operation == .put ? Self.decodeOwner(entry.value)?.node : nil
                    state.withLock { $0.owners[namespace] = owner }
                }
                var live: [String: String] = [:]
                var load: [String: [String: Int]] = [:]
                var incarnations: [String: String] = [:]
                for node in known {
                    if let entry = try nodes.entry(node) {
                        live[node] = Self.decodeURL(entry.value) ?? ""
                        incarnations[node] = Self.decodeIncarnation(entry.value)
                        if node != name { load[node] = Self.decodeLoad(entry.value) }
                    }
                }
                let (orphans, gone): ([String], [String]) = state.withLock { state in
                    let gone = Set(state.incarnations.values).subtracting(incarnations.values)
                    state.live = live
                    state.load = load
                    state.incarnations = incarnations
                    var found: [String] = []
                    for (namespace, owner) in state.owners where live[owner] == nil && state.held[namespace] == nil {
                        if !state.offered.contains(namespace),
                            Self.preferredOwner(of: namespace, among: live.keys) == name
                        {
                            state.offered.insert(namespace)
                            found.append(namespace)
                        }
                    }
                    return (found, gone.sorted())
                }
                for namespace in orphans {
                    logger.notice("cluster.orphan", ["ns": namespace, "node": name])
                    onOrphan?(namespace)
                }
                for dead in gone where dead != incarnation {
                    do {
                        try performDisconnects(of: dead)
                    } catch {
                        // Left in the bucket: the next claim of each namespace performs them.
                        logger.warning("cluster.ondisconnect_scan_failed", ["incarnation": dead, "error": "\(error)"])
                    }
                }
            } catch {
                logger.warning("cluster.watch_failed", ["error": "\(error)"])
                nodeWatch = nil
                ownerWatch = nil
            }
            usleep(1_000_000)
        }
        nodeWatch?.stop()
        ownerWatch?.stop()
    }

    /// An orphan offered to `onOrphan` was claimed, or could not be: it may be offered again later.
    func orphanHandled(_ namespace: String) {
        _ = state.withLock { $0.offered.remove(namespace) }
    }

    private static func decodeURL(_ value: [UInt8]) -> String? {
        (try? JSONValue.parse(value))?["url"]?.stringValue
    }

    private static func decodeIncarnation(_ value: [UInt8]) -> String? {
        (try? JSONValue.parse(value))?["inc"]?.stringValue
    }

    /// The incarnation `node`'s lease names now; nil when it has no lease.
    func leaseIncarnation(of node: String) throws -> String? {
        try nodes.entry(node).flatMap { Self.decodeIncarnation($0.value) }
    }

    /// The namespaces this node owns.
    var heldNamespaces: Set<String> { state.withLock { Set($0.held.keys) } }

    struct OwnerRecord {
        var node: String
        var url: String
    }

    static func decodeOwner(_ value: [UInt8]) -> OwnerRecord? {
        guard let json = try? JSONValue.parse(value), let node = json["node"]?.stringValue else { return nil }
        return OwnerRecord(node: node, url: json["url"]?.stringValue ?? "")
    }

    // MARK: - Claiming

    /// Decides who serves `namespace`, claiming it for this node when it is free and this node should have it
    /// (Cluster.md#Ownership-leases-and-fencing). Blocks: call on `claimQueue`.
    func claim(_ namespace: String) throws -> ClaimOutcome {
        guard leaseIsValid else { throw ClusterError("this node's cluster lease is not valid (NATS unreachable?)") }
        let key = "ns." + namespace
        for _ in 0..<8 {
            let entry = try owners.entry(key)
            let record = entry.flatMap { Self.decodeOwner($0.value) }
            // The recorded owner's own lease decides, read now: this node's view of the live nodes may not know
            // a node that joined a moment ago.
            if let record, record.node != name, let lease = try nodes.entry(record.node) {
                return .elsewhere(url: Self.decodeURL(lease.value) ?? record.url, node: record.node)
            }
            let live = try liveNodes()
            if record == nil, let preferred = Self.preferredOwner(of: namespace, among: live.keys),
                preferred != name, let url = live[preferred]
            {
                return .elsewhere(url: url, node: preferred)
            }
            // Free, or held by a node whose lease is gone (or by this node's previous incarnation): take it.
            var value: [UInt8] = []
            JSONValue.object([
                JSONMember("node", .string(name)), JSONMember("url", .string(configuration.advertise)),
            ]).write(into: &value)
            let epoch: UInt64
            do {
                if let entry { epoch = try owners.update(key, value, revision: entry.revision) }
                else { epoch = try owners.create(key, value) }
            } catch KeyValueError.wrongRevision, KeyValueError.keyExists {
                continue  // another node claimed it meanwhile: read again
            }
            state.withLock { $0.owners[namespace] = name }
            return try takeOver(namespace, epoch: epoch)
        }
        throw ClusterError("namespace '\(namespace)' could not be claimed: its owner record keeps changing")
    }

    /// The live nodes as NATS says now (not the last poll: a claim must not take a live node's namespace).
    private func liveNodes() throws -> [String: String] {
        let known = state.withLock { Set($0.live.keys).union($0.owners.values) }
        var live: [String: String] = [name: configuration.advertise]
        for node in known where node != name {
            if let entry = try nodes.entry(node) { live[node] = Self.decodeURL(entry.value) ?? "" }
        }
        return live
    }

    /// Steps 2 and 3 of a claim: the tree brought to the log's end (from the newest snapshot), then the takeover
    /// marker fenced on it.
    private func takeOver(_ namespace: String, epoch: UInt64) throws -> ClaimOutcome {
        let (stream, subject) = log(of: namespace)
        let started = monotonicNanoseconds()
        var replayed: ReplayedLog?
        for _ in 0..<8 {
            let last = try js.lastMessage(stream: stream, subject: subject)?.sequence ?? 0
            if var current = replayed {
                if last > current.applied {
                    try replay(stream: stream, subject: subject, through: last, into: &current)
                }
                replayed = current
            } else {
                replayed = try load(namespace, stream: stream, subject: subject, through: last)
            }
            guard var current = replayed else { continue }
            var headers = NATSHeaders()
            headers.set("Canopy-Epoch", String(epoch))
            headers.set("Canopy-Node", name)
            let marker = ClusterBatch.encodeTakeover(node: name)
            do {
                let ack = try js.publish(
                    subject, payload: marker,
                    options: JetStreamPublishOptions(
                        messageID: "\(name).\(epoch).takeover", expectedLastSubjectSequence: current.applied,
                        expectedStream: stream, headers: headers))
                current.apply(.takeover(node: name), sequence: ack.sequence, bytes: marker.count)
                let log = NamespaceLog(
                    node: self, namespace: namespace, stream: stream, subject: subject, epoch: epoch, state: current)
                state.withLock { state in
                    state.held[namespace]?.depose(reason: "claimed again")
                    state.held[namespace] = log
                    state.offered.remove(namespace)
                }
                logger.notice(
                    "cluster.claimed",
                    [
                        "ns": namespace, "node": name, "epoch": "\(epoch)", "log_seq": "\(ack.sequence)",
                        "snapshot_seq": "\(current.snapshot?.sequence ?? 0)", "replayed": "\(current.messages)",
                        "load_ms": "\((monotonicNanoseconds() - started) / 1_000_000)",
                    ])
                return .owned(tree: current.tree, rules: current.rules, log: log)
            } catch let error as JetStreamError where error.isWrongLastSequence {
                continue  // the former owner appended after the read: catch up and fence again
            }
        }
        throw ClusterError("namespace '\(namespace)': the former owner keeps appending; not claimed")
    }

    // MARK: - Replicas

    /// A replica's starting point: the tree and rules as the log holds them up to its leader's last sequence.
    /// Blocks: call on `claimQueue`.
    func replicaStart(_ namespace: String) throws -> (tree: Node, rules: String?, replica: NamespaceReplica) {
        let (stream, subject) = log(of: namespace)
        let last = try js.lastMessage(stream: stream, subject: subject)?.sequence ?? 0
        let state = try load(namespace, stream: stream, subject: subject, through: last)
        let replica = NamespaceReplica(
            node: self, namespace: namespace, stream: stream, subject: subject, applied: state.applied)
        return (state.tree, state.rules, replica)
    }

    /// The advertised URL of the namespace's owner, read now; nil when it has none or its lease is gone.
    func ownerURL(of namespace: String) throws -> String? {
        guard let entry = try owners.entry("ns." + namespace), let record = Self.decodeOwner(entry.value),
            record.node != name, let lease = try nodes.entry(record.node)
        else { return nil }
        return Self.decodeURL(lease.value) ?? record.url
    }

    /// Forwards a replica's write to the owner's REST API as the admin (`credential`), the writer's identity in
    /// the target's `auth_variable_override`; on success, the log's last sequence then (the write is at or before
    /// it). Runs on the proxy's threads (`ClusterProxy.runBlocking`) and keep-alive connections to the owner. The
    /// owner's URL is looked up once and kept in `replica.currentOwnerURL` (which a takeover marker in the log
    /// replaces), and forgotten when the owner does not answer.
    func forwarder(for namespace: String, credential: String, replica: NamespaceReplica, proxy: ClusterProxy)
        -> ReplicaForwarder
    {
        let (stream, subject) = log(of: namespace)
        return { [self] method, target, headers, body, done in
            proxy.runBlocking { pool in
                var owner: String?
                do {
                    let known = replica.currentOwnerURL.withLock { $0 }
                    guard let url = try known ?? self.ownerURL(of: namespace) else {
                        return done(.ownerUnavailable("the namespace has no live owner"))
                    }
                    owner = url
                    if known == nil { replica.currentOwnerURL.withLock { if $0 == nil { $0 = url } } }
                    let host = ClusterConfiguration.host(of: url)
                    guard let colon = host.lastIndex(of: ":"), let port = Int(host[host.index(after: colon)...]) else {
                        return done(.refused(status: 503, message: "the owner's address has no port", current: nil))
                    }
                    let response = try pool.request(
                        host: String(host[..<colon]), port: port, method, target,
                        headers: headers + [("Authorization", "Bearer " + credential)], body: body)
                    guard response.status == 200 else {
                        let json = try? JSONValue.parse(response.body)
                        if response.status == 503 {  // past its lease, or the namespace is moving
                            Self.forget(url, in: replica)
                            return done(.ownerUnavailable(json?["error"]?.stringValue ?? response.text))
                        }
                        return done(
                            .refused(
                                status: response.status, message: json?["error"]?.stringValue ?? response.text,
                                current: response.status == 412 ? json : nil))
                    }
                    let sequence = try self.js.lastMessage(stream: stream, subject: subject)?.sequence ?? 0
                    done(.stored(sequence))
                } catch {
                    if let owner { Self.forget(owner, in: replica) }
                    done(.ownerUnavailable("the owner did not answer: \(error)"))
                }
            }
        }
    }

    /// The owner at `url` did not take a forwarded write: the next one looks the owner up again.
    private static func forget(_ url: String, in replica: NamespaceReplica) {
        replica.currentOwnerURL.withLock { if $0 == url { $0 = nil } }
    }

    /// A held namespace's log was fenced or closed: forget it.
    func released(_ log: NamespaceLog) {
        state.withLock { state in
            if state.held[log.namespace] === log { state.held[log.namespace] = nil }
        }
    }

    /// Gives up a namespace this node holds (the daemon closes it): its owner record is removed so the next
    /// request's node claims it at once.
    func giveUp(_ log: NamespaceLog) {
        released(log)
        log.close()
    }

    private static func retrying<T>(for limit: Duration, _ body: () throws -> T) throws -> T {
        let deadline = monotonicNanoseconds() + UInt64(limit.nanoseconds)
        while true {
            do {
                return try body()
            } catch {
                // A new cluster has no JetStream meta leader for its first seconds (err_code 10008).
                guard monotonicNanoseconds() < deadline else { throw error }
                usleep(200_000)
            }
        }
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

#if canImport(Glibc)
    import Glibc
#endif
