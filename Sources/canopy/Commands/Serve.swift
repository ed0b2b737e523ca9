// Serve -- `canopy serve`: run the daemon until SIGTERM/SIGINT.

import CCanopyLinux
import CanopyCore
import CanopyNATS
import CanopyPublish
import CanopyServer
import CanopyStore

struct Serve: Command {
    static let name = "serve"
    static let abstract = "Run the Canopy daemon."
    static let usage = """
        canopy serve [--host <addr>] [--port <n>] [--data <dir>] [--default-ns <name>] [--rules <file>]
                     [--public-keys <pem-or-jwks-file>]... [--allow-tokens-without-exp] [--emulator]
                     [--sync full|normal] [--accept-data-loss <ns>]... [--accept-all-data-loss]
                     [--demo] [--max-connections <n>] [--max-output-backlog <MiB>]
                     [--max-output-memory <MiB>] [--max-body-memory <MiB>]
                     [--store-threads <n>] [--max-open-namespaces <n>] [--max-namespace-memory <MiB>]
                     [--namespace-idle <seconds>] [--metrics-port <n>] [--drain-timeout <seconds>]
                     [--max-listens-per-connection <n>] [--max-listens <n>]
                     [--max-ondisconnect-per-connection <n>] [--max-ondisconnect <n>]
                     [--max-longpoll-sessions <n>] [--max-longpoll-sessions-per-address <n>]
                     [--max-longpoll-pending <MiB>]
                     [--log-level <level>] [--log-format logfmt|json]
                     [--tls-cert <pem-chain> --tls-key <pem-key>]
                     [--cluster nats://<host>:<port>[,...] --node <name> --advertise <url> [--lease <ms>]
                      [--cluster-rest proxy|redirect] [--replicate | --replicate-above <n>|never]
                      [--snapshot-batches <n>] [--snapshot-log-mib <MiB>]]
          --host         address to bind (default 127.0.0.1)
          --port         TCP port (default 9000; 0 picks a free one)
          --data         data directory: one SQLite file per namespace, secrets (default ./canopy-data)
          --default-ns   namespace for requests without ?ns= (default 'default')
          --rules        security rules file applied to namespaces without rules of their own
          --public-keys  PEM or JWKS file with RS256/ES256 keys of an external identity provider
          --allow-tokens-without-exp  accept signed tokens without an 'exp' claim (they never expire);
                         by default such a token is refused
          --emulator     also accept 'Authorization: Bearer owner' as admin and unsigned tokens (tests only)
          --sync         SQLite synchronous mode: full (default; survives power loss) or normal
          --accept-data-loss  serve namespace <ns> even though committed writes are missing from its
                         database (its write-ahead log was deleted, truncated or damaged): what was
                         recovered becomes the new baseline. Without it such a namespace refuses
                         service (503) and the log names it (event ns.data_loss)
          --accept-all-data-loss  the same for every namespace
          --max-connections  simultaneous connections before new ones get 503 (default 10000); the open-file
                         limit is raised to fit when the system allows
          --max-output-backlog  unsent output (MiB) a subscriber's stream or socket may hold before it is
                         closed as a slow consumer, which is logged with a running total (default 32)
          --max-output-memory  unsent output (MiB) of all subscribers together (default 512); past it the
                         largest backlogs are closed first, logged as conn.output_budget
          --max-body-memory  request bodies (MiB) in flight together, on every connection (default 256); a
                         body that does not fit is answered 503 with Retry-After before it is read
          --store-threads  threads shared by every namespace's SQLite work: commits, WAL syncs, loading
                         trees (default 4)
          --max-open-namespaces  namespaces with a file kept open (default 1000); past it, idle ones are closed,
                         least recently used first, and reopened on demand
          --max-namespace-memory  estimated memory (MiB) for the trees of open namespaces (default 1024); past
                         it, idle ones are closed, least recently used first, never the one used last
          --namespace-idle  seconds after which a namespace nothing uses is closed (default 60)
          --metrics-port  also serve /.canopy/metrics, /.canopy/health and /.canopy/ready without credentials on
                         127.0.0.1:<n> (0 picks a free one); without it, /.canopy/metrics needs the admin credential
          --drain-timeout  seconds SIGTERM/SIGINT may take to drain: stop accepting, finish in-flight writes, tell
                         clients to reconnect; what is still open then is closed (default 10)
          --log-level    trace, debug, info (default), notice, warning or error
          --log-format   logfmt (default) or json: one line per event on stderr
          --max-listens-per-connection  listens one WebSocket or long-poll connection may hold (default 10000);
                         more are refused with status 'unavailable', the connection stays open
          --max-listens  listens of all connections together (default 1000000)
          --max-ondisconnect-per-connection  onDisconnect operations one connection may queue (default 10000);
                         more are refused with status 'unavailable'
          --max-ondisconnect  onDisconnect operations of all connections together, queued or running
                         (default 1000000)
          --max-longpoll-sessions  long-poll sessions of the server (default 10000); more get 503
          --max-longpoll-sessions-per-address  long-poll sessions of one client IP address, or IPv6 /64
                         (default 100; below --max-longpoll-sessions); more get 429. Behind a proxy every
                         client has the proxy's address: raise it
          --max-longpoll-pending  MiB of long-poll segments waiting to be reassembled, all sessions together
                         (default 256); a request that would pass it gets 503 and its session ends
          --demo         load the demo event (seed/canopy-demo-summit.json, with seed/attendees.json as its
                         stored directory) into namespace canopy-demo-summit
                         with the event rules, unless it already holds data
          --tls-cert     serve HTTPS, WSS and SSE over TLS 1.2/1.3 on the port with this PEM certificate chain
                         (server certificate first, then intermediates); reloaded with the key on SIGHUP
          --tls-key      the PEM private key of --tls-cert (both or neither)
          --cluster      join a cluster on NATS JetStream (3 servers, JetStream enabled): each namespace is
                         owned by one node, its writes acknowledged once in an R3 log, clients of other nodes
                         sent to it (README.md#Cluster). --node and --advertise are then required
          --node         this node's name in the cluster, unique (letters, digits, '_' or '-')
          --advertise    the URL clients reach this node at (http://host:port); redirects name it
          --lease        milliseconds a dead node keeps its namespaces before others take them (default 6000;
                         the first node's is the cluster's: without --lease a node takes it, with another
                         value it refuses to join)
          --cluster-rest  REST and SSE requests for a namespace another node owns: proxy (default: forwarded to
                         the owner, credential included) or redirect (307 to the owner; most HTTP clients then
                         drop the Authorization header, as the port changes)
          --replicate    serve namespaces other nodes own from a replica fed by their log (reads and listens
                         here, writes forwarded to the owner and acknowledged once applied here), so one
                         event's listeners can be spread over every node
          --replicate-above  without --replicate: replicate a namespace another node owns once the cluster
                         holds more than this many clients of it (WebSocket, long-poll and SSE; default
                         2000), while this node has under 80% of --max-connections; below that its clients
                         are sent to the owner. never: only the owner serves a namespace
          --snapshot-batches  an owner snapshots a namespace into NATS after this many log messages (default
                         10000; 0: never by count), then trims its log below the snapshot before
          --snapshot-log-mib  or once the log since its last snapshot holds this many MiB (default 64; 0: never
                         by size)

        Every option can be given as an environment variable instead: --max-connections as CANOPY_MAX_CONNECTIONS,
        --data as CANOPY_DATA, and so on (CANOPY_ + the name in capitals, '-' as '_'). An option on the command line
        wins over its variable. Flags take 1, true or yes (on) and 0, false or no (off).
        """

    var configuration = ServerConfiguration()
    var demo = false
    /// Applied when the daemon starts (parsing changes nothing: `canopy service` parses serve's options too).
    var logLevel: LogLevel?
    var logJSON: Bool?
    private var tlsCertificate: String?
    private var tlsKey: String?
    private var clusterServers: String?
    private var clusterNode: String?
    private var clusterAdvertise: String?
    private var clusterLease: Int?
    private var snapshotBatches: Int?
    private var snapshotLogMiB: Int?
    private var clusterRedirectsREST = false
    private var clusterReplicates = false
    /// `--replicate-above`: a number, `.some(nil)` for `never`, nil when not given.
    private var clusterReplicateAbove: Int??

    /// Every option of `canopy serve`, and whether it is a flag (takes no value). Each can also be given as an
    /// environment variable: `--max-connections` as `CANOPY_MAX_CONNECTIONS`; the command line wins.
    static let options: [(name: String, isFlag: Bool)] = [
        ("--host", false), ("--port", false), ("--data", false), ("--default-ns", false), ("--rules", false),
        ("--public-keys", false), ("--allow-tokens-without-exp", true), ("--emulator", true), ("--sync", false),
        ("--demo", true), ("--max-connections", false), ("--max-output-backlog", false), ("--max-output-memory", false),
        ("--max-body-memory", false), ("--store-threads", false),
        ("--max-open-namespaces", false), ("--max-namespace-memory", false), ("--namespace-idle", false),
        ("--metrics-port", false), ("--drain-timeout", false), ("--log-level", false), ("--log-format", false),
        ("--accept-data-loss", false), ("--accept-all-data-loss", true), ("--tls-cert", false), ("--tls-key", false),
        ("--max-listens-per-connection", false), ("--max-listens", false), ("--max-ondisconnect-per-connection", false),
        ("--max-ondisconnect", false), ("--max-longpoll-sessions", false), ("--max-longpoll-sessions-per-address", false),
        ("--max-longpoll-pending", false), ("--cluster", false), ("--node", false), ("--advertise", false),
        ("--lease", false), ("--cluster-rest", false), ("--replicate", true), ("--replicate-above", false),
        ("--snapshot-batches", false), ("--snapshot-log-mib", false),
    ]

    /// The environment variable of `option`: `--max-connections` → `CANOPY_MAX_CONNECTIONS`.
    static func environmentName(of option: String) -> String {
        "CANOPY_" + String(option.dropFirst(2).uppercased().map { $0 == "-" ? "_" : $0 })
    }

    init(parsing arguments: inout Arguments) throws(UsageError) {
        try self.init(parsing: &arguments, environment: { environment($0) })
    }

    /// Options from `environment` (`CANOPY_*`) first, then from the command line, which wins: an option given
    /// there ignores its variable. A bad value in a variable is refused naming the variable.
    init(parsing arguments: inout Arguments, environment: (String) -> String?) throws(UsageError) {
        let given = Set(arguments.remainingOptionNames)
        for (option, isFlag) in Self.options where !given.contains(option) {
            let variable = Self.environmentName(of: option)
            guard let value = environment(variable) else { continue }
            do throws(UsageError) {
                if isFlag {
                    switch value.lowercased() {
                    case "1", "true", "yes", "on":
                        var none = Arguments([])
                        try apply(option, from: &none)
                    case "0", "false", "no", "off", "": break
                    default: throw UsageError.invalidValue(option, value, expected: "1, true, yes, 0, false or no")
                    }
                } else {
                    var words = Arguments([value])
                    try apply(option, from: &words)
                }
            } catch {
                throw UsageError(message: "environment variable \(variable): \(error.message)")
            }
        }
        while let option = try arguments.nextOption() {
            try apply(option, from: &arguments)
        }
        switch (tlsCertificate, tlsKey) {
        case (let certificate?, let key?): configuration.tls = .init(certificateFile: certificate, keyFile: key)
        case (nil, nil): break
        case (nil, _): throw .missingOption("--tls-cert")
        case (_, nil): throw .missingOption("--tls-key")
        }
        if let clusterServers {
            var servers: [NATSServerAddress] = []
            for item in clusterServers.split(separator: ",") {
                guard let address = NATSServerAddress(String(item)) else {
                    throw UsageError(message: "--cluster: '\(item)' is not a NATS address (nats://host:port)")
                }
                servers.append(address)
            }
            guard !servers.isEmpty else { throw UsageError(message: "--cluster needs at least one NATS address") }
            guard let node = clusterNode else { throw .missingOption("--node") }
            guard let advertise = clusterAdvertise else { throw .missingOption("--advertise") }
            guard advertise.hasPrefix("http://") || advertise.hasPrefix("https://"),
                !ClusterConfiguration.host(of: advertise).isEmpty
            else { throw UsageError(message: "--advertise: '\(advertise)' is not an http:// or https:// URL") }
            var cluster = ClusterConfiguration(servers: servers, node: node, advertise: advertise)
            if let clusterLease {
                cluster.leaseMilliseconds = clusterLease
                cluster.leaseIsExplicit = true
            }
            if let snapshotBatches { cluster.snapshotBatches = snapshotBatches }
            if let snapshotLogMiB { cluster.snapshotBytes = snapshotLogMiB << 20 }
            cluster.proxiesREST = !clusterRedirectsREST
            cluster.replicates = clusterReplicates
            if clusterReplicates && clusterReplicateAbove != nil {
                throw UsageError(message: "--replicate and --replicate-above exclude each other: --replicate replicates always")
            }
            if let clusterReplicateAbove { cluster.replicateAbove = clusterReplicateAbove }
            cluster.replicaConnectionBudget = configuration.maxConnections / 5 * 4
            configuration.cluster = cluster
        } else if clusterNode != nil || clusterAdvertise != nil || clusterLease != nil || clusterRedirectsREST
            || clusterReplicates || clusterReplicateAbove != nil || snapshotBatches != nil || snapshotLogMiB != nil
        {
            throw UsageError(
                message: "--node, --advertise, --lease, --cluster-rest, --replicate, --replicate-above, "
                    + "--snapshot-batches and --snapshot-log-mib need --cluster")
        }
        // One address must not be able to take every session (Architecture.md#Bounded-resources).
        guard configuration.maxLongPollSessionsPerAddress < configuration.maxLongPollSessions else {
            throw UsageError(
                message: "--max-longpoll-sessions-per-address (\(configuration.maxLongPollSessionsPerAddress)) must "
                    + "be below --max-longpoll-sessions (\(configuration.maxLongPollSessions))")
        }
    }

    /// Applies one option, reading its value (if it takes one) from `arguments`.
    private mutating func apply(_ option: String, from arguments: inout Arguments) throws(UsageError) {
        switch option {
        case "--tls-cert": tlsCertificate = try arguments.value(for: option)
        case "--tls-key": tlsKey = try arguments.value(for: option)
        case "--cluster": clusterServers = try arguments.value(for: option)
        case "--node": clusterNode = try arguments.value(for: option)
        case "--advertise": clusterAdvertise = try arguments.value(for: option)
        case "--lease": clusterLease = try arguments.int(for: option, in: 1000...600_000)
        case "--replicate": clusterReplicates = true
        case "--replicate-above":
            let text = try arguments.value(for: option)
            if text == "never" {
                clusterReplicateAbove = .some(nil)
            } else if let n = Int(text), n >= 0, n <= 100_000_000 {
                clusterReplicateAbove = n
            } else {
                throw UsageError(message: "--replicate-above must be a number of clients (0 to 100000000) or never, not '\(text)'")
            }
        case "--snapshot-batches": snapshotBatches = try arguments.int(for: option, in: 0...100_000_000)
        case "--snapshot-log-mib": snapshotLogMiB = try arguments.int(for: option, in: 0...1_048_576)
        case "--cluster-rest":
            let mode = try arguments.value(for: option)
            guard mode == "proxy" || mode == "redirect" else {
                throw UsageError(message: "--cluster-rest must be proxy or redirect, not '\(mode)'")
            }
            clusterRedirectsREST = mode == "redirect"
        case "--host": configuration.host = try arguments.value(for: option)
        case "--port": configuration.port = try arguments.int(for: option, in: 0...65535)
        case "--data": configuration.dataDirectory = try arguments.value(for: option)
        case "--default-ns": configuration.defaultNamespace = try arguments.value(for: option)
        case "--rules": configuration.rulesFile = try arguments.value(for: option)
        case "--public-keys": configuration.publicKeyFiles.append(try arguments.value(for: option))
        case "--emulator": configuration.emulator = true
        case "--allow-tokens-without-exp": configuration.allowTokensWithoutExpiry = true
        case "--demo": demo = true
        case "--accept-data-loss":
            let namespace = try arguments.value(for: option)
            guard DataDirectory.isValidNamespace(namespace) else {
                throw .invalidValue(option, namespace, expected: "a namespace name")
            }
            configuration.acceptDataLossNamespaces.insert(namespace)
        case "--accept-all-data-loss": configuration.acceptAllDataLoss = true
        case "--max-connections":
            configuration.maxConnections = try arguments.int(for: option, in: 1...1_000_000)
        case "--max-output-backlog":
            configuration.maxOutputBacklogBytes = try arguments.int(for: option, in: 1...4_096) << 20
        case "--max-output-memory":
            configuration.maxOutputMemoryBytes = try arguments.int(for: option, in: 1...65_536) << 20
        case "--max-body-memory":
            configuration.maxBodyMemoryBytes = try arguments.int(for: option, in: 1...65_536) << 20
        case "--store-threads": configuration.storeThreads = try arguments.int(for: option, in: 1...64)
        case "--max-open-namespaces":
            configuration.maxOpenNamespaces = try arguments.int(for: option, in: 1...1_000_000)
        case "--max-namespace-memory":
            configuration.maxNamespaceMemoryBytes = try arguments.int(for: option, in: 1...1_048_576) << 20
        case "--namespace-idle":
            configuration.namespaceIdleMilliseconds = Int64(try arguments.int(for: option, in: 1...86_400)) * 1000
        case "--metrics-port": configuration.metricsPort = try arguments.int(for: option, in: 0...65535)
        case "--drain-timeout":
            configuration.drainTimeoutMilliseconds = Int64(try arguments.int(for: option, in: 1...3_600)) * 1000
        case "--max-listens-per-connection":
            configuration.maxListensPerConnection = try arguments.int(for: option, in: 1...10_000_000)
        case "--max-listens": configuration.maxListens = try arguments.int(for: option, in: 1...100_000_000)
        case "--max-ondisconnect-per-connection":
            configuration.maxOnDisconnectPerConnection = try arguments.int(for: option, in: 1...10_000_000)
        case "--max-ondisconnect":
            configuration.maxOnDisconnectOperations = try arguments.int(for: option, in: 1...100_000_000)
        case "--max-longpoll-sessions":
            configuration.maxLongPollSessions = try arguments.int(for: option, in: 2...1_000_000)
        case "--max-longpoll-sessions-per-address":
            configuration.maxLongPollSessionsPerAddress = try arguments.int(for: option, in: 1...1_000_000)
        case "--max-longpoll-pending":
            configuration.maxLongPollPendingCharacters = try arguments.int(for: option, in: 1...65_536) << 20
        case "--sync":
            let mode = try arguments.value(for: option)
            guard mode == "full" || mode == "normal" else {
                throw .invalidValue(option, mode, expected: "full or normal")
            }
            configuration.synchronousFull = mode == "full"
        case "--log-level":
            let name = try arguments.value(for: option)
            guard let level = LogLevel(name: name) else {
                throw .invalidValue(option, name, expected: "trace, debug, info, notice, warning or error")
            }
            logLevel = level
        case "--log-format":
            let format = try arguments.value(for: option)
            guard format == "logfmt" || format == "json" else {
                throw .invalidValue(option, format, expected: "logfmt or json")
            }
            logJSON = format == "json"
        default: throw .unknownOption(option, command: Self.name)
        }
    }

    func run() throws {
        if let logLevel { LogSettings.level = logLevel }
        if let logJSON { LogSettings.json = logJSON }
        // Each open namespace holds up to five descriptors (database, WAL, shared memory, WAL syncer, commit record).
        raiseOpenFileLimit(toFit: configuration.maxConnections + 5 * configuration.maxOpenNamespaces + 64)
        let daemon = try Daemon(configuration: configuration)
        try daemon.start()
        if demo {
            let seed = PackageFiles.path("seed/canopy-demo-summit.json")
            var document = try ExportDocument.parse(Array(try readFile(seed).utf8))
            // The demo event's attendee directory is stored with it, as the console uploads one (ConsoleAPI).
            let attendees = try JSONValue.parse(try readFile(PackageFiles.path("seed/attendees.json")))
            document.data = document.data.setting(
                try Node.from(json: try DirectoryDocument(document: attendees).json), at: DirectoryDocument.path)
            let rules = try readFile(PackageFiles.path("rules/personalized-content.rules.json"))
            daemon.seedIfEmpty(namespace: "canopy-demo-summit", document: document, rulesSource: rules)
        }
        // With --demo, the way into the organiser console: its address and the credential to paste (a demo's
        // credential is for the person at this terminal; a production daemon never prints it).
        let console = "\(daemon.scheme)://\(configuration.host):\(daemon.port)/.canopy/console/"
        var demoCredential: String?
        if demo, let text = try? readFile(daemon.credentials.adminCredentialPath) {
            demoCredential = String(text.filter { !$0.isWhitespace })
        }
        print(
            """
            canopy: serving \(daemon.scheme)://\(configuration.host):\(daemon.port) (data: \(configuration.dataDirectory))
            canopy: admin credential in \(daemon.credentials.adminCredentialPath) (mode 0600); \
            use it as 'Authorization: Bearer <credential>'
            """ + (daemon.metricsPort.map { "\ncanopy: metrics on http://127.0.0.1:\($0)/.canopy/metrics" } ?? "")
                + (demo ? "\ncanopy: demo event in namespace canopy-demo-summit (try: canopy status --ns canopy-demo-summit)" : "")
                + (configuration.emulator ? "\ncanopy: emulator mode: 'Authorization: Bearer owner' is admin" : "")
                + "\ncanopy: organiser console: \(console)"
                + (demoCredential.map { "\ncanopy: sign in with the admin credential: \($0)" } ?? ""))
        fflush(nil)
        daemon.run()
    }
}

#if canImport(Glibc)
    import Glibc
#endif

/// Raises the soft open-file limit so `count` sockets fit (up to the hard limit); silent when not permitted.
func raiseOpenFileLimit(toFit count: Int) {
    var limit = rlimit()
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    guard getrlimit(resource, &limit) == 0, limit.rlim_cur < rlim_t(count) else { return }
    limit.rlim_cur = min(limit.rlim_max, rlim_t(count))
    _ = setrlimit(resource, &limit)
}
