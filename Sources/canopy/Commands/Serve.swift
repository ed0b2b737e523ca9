// Serve -- `canopy serve`: run the daemon until SIGTERM/SIGINT.

import CCanopyLinux
import CanopyCore
import CanopyServer

struct Serve: Command {
    static let name = "serve"
    static let abstract = "Run the Canopy daemon."
    static let usage = """
        canopy serve [--host <addr>] [--port <n>] [--data <dir>] [--default-ns <name>] [--rules <file>]
                     [--public-keys <pem-or-jwks-file>]... [--allow-tokens-without-exp] [--emulator]
                     [--sync full|normal]
                     [--demo] [--max-connections <n>] [--max-output-backlog <MiB>]
                     [--store-threads <n>] [--max-open-namespaces <n>] [--max-namespace-memory <MiB>]
                     [--namespace-idle <seconds>] [--metrics-port <n>] [--drain-timeout <seconds>]
                     [--log-level <level>] [--log-format logfmt|json]
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
          --max-connections  simultaneous connections before new ones get 503 (default 10000); the open-file
                         limit is raised to fit when the system allows
          --max-output-backlog  unsent output (MiB) a subscriber's stream or socket may hold before it is
                         closed as a slow consumer, which is logged with a running total (default 32)
          --store-threads  threads shared by every namespace's SQLite work: commits, WAL syncs, loading
                         trees (default 4)
          --max-open-namespaces  namespaces with a file kept open (default 1000); past it, idle ones are closed,
                         least recently used first, and reopened on demand
          --max-namespace-memory  estimated memory (MiB) for the trees of open namespaces (default 1024); past
                         it, idle ones are closed, least recently used first
          --namespace-idle  seconds after which a namespace nothing uses is closed (default 60)
          --metrics-port  also serve /.canopy/metrics, /.canopy/health and /.canopy/ready without credentials on
                         127.0.0.1:<n> (0 picks a free one); without it, /.canopy/metrics needs the admin credential
          --drain-timeout  seconds SIGTERM/SIGINT may take to drain: stop accepting, finish in-flight writes, tell
                         clients to reconnect; what is still open then is closed (default 10)
          --log-level    trace, debug, info (default), notice, warning or error
          --log-format   logfmt (default) or json: one line per event on stderr
          --demo         load the demo event (seed/canopy-demo-summit.json) into namespace canopy-demo-summit
                         with the event rules, unless it already holds data

        Every option can be given as an environment variable instead: --max-connections as CANOPY_MAX_CONNECTIONS,
        --data as CANOPY_DATA, and so on (CANOPY_ + the name in capitals, '-' as '_'). An option on the command line
        wins over its variable. Flags take 1, true or yes (on) and 0, false or no (off).
        """

    var configuration = ServerConfiguration()
    var demo = false
    /// Applied when the daemon starts (parsing changes nothing: `canopy service` parses serve's options too).
    var logLevel: LogLevel?
    var logJSON: Bool?

    /// Every option of `canopy serve`, and whether it is a flag (takes no value). Each can also be given as an
    /// environment variable: `--max-connections` as `CANOPY_MAX_CONNECTIONS`; the command line wins.
    static let options: [(name: String, isFlag: Bool)] = [
        ("--host", false), ("--port", false), ("--data", false), ("--default-ns", false), ("--rules", false),
        ("--public-keys", false), ("--allow-tokens-without-exp", true), ("--emulator", true), ("--sync", false),
        ("--demo", true), ("--max-connections", false), ("--max-output-backlog", false), ("--store-threads", false),
        ("--max-open-namespaces", false), ("--max-namespace-memory", false), ("--namespace-idle", false),
        ("--metrics-port", false), ("--drain-timeout", false), ("--log-level", false), ("--log-format", false),
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
    }

    /// Applies one option, reading its value (if it takes one) from `arguments`.
    private mutating func apply(_ option: String, from arguments: inout Arguments) throws(UsageError) {
        switch option {
        case "--host": configuration.host = try arguments.value(for: option)
        case "--port": configuration.port = try arguments.int(for: option, in: 0...65535)
        case "--data": configuration.dataDirectory = try arguments.value(for: option)
        case "--default-ns": configuration.defaultNamespace = try arguments.value(for: option)
        case "--rules": configuration.rulesFile = try arguments.value(for: option)
        case "--public-keys": configuration.publicKeyFiles.append(try arguments.value(for: option))
        case "--emulator": configuration.emulator = true
        case "--allow-tokens-without-exp": configuration.allowTokensWithoutExpiry = true
        case "--demo": demo = true
        case "--max-connections":
            configuration.maxConnections = try arguments.int(for: option, in: 1...1_000_000)
        case "--max-output-backlog":
            configuration.maxOutputBacklogBytes = try arguments.int(for: option, in: 1...4_096) << 20
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
        // Each open namespace holds up to four descriptors (database, WAL, shared memory, WAL syncer).
        raiseOpenFileLimit(toFit: configuration.maxConnections + 4 * configuration.maxOpenNamespaces + 64)
        let daemon = try Daemon(configuration: configuration)
        try daemon.start()
        if demo {
            let seed = PackageFiles.path("seed/canopy-demo-summit.json")
            let document = try ExportDocument.parse(Array(try readFile(seed).utf8))
            let rules = try readFile(PackageFiles.path("rules/personalized-content.rules.json"))
            daemon.seedIfEmpty(namespace: "canopy-demo-summit", document: document, rulesSource: rules)
        }
        print(
            """
            canopy: serving http://\(configuration.host):\(daemon.port) (data: \(configuration.dataDirectory))
            canopy: admin credential in \(daemon.credentials.adminCredentialPath) (mode 0600); \
            use it as 'Authorization: Bearer <credential>'
            """ + (daemon.metricsPort.map { "\ncanopy: metrics on http://127.0.0.1:\($0)/.canopy/metrics" } ?? "")
                + (demo ? "\ncanopy: demo event in namespace canopy-demo-summit (try: canopy status --ns canopy-demo-summit)" : "")
                + (configuration.emulator ? "\ncanopy: emulator mode: 'Authorization: Bearer owner' is admin" : ""))
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
