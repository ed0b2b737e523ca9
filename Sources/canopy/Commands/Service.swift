// Service -- `canopy service`: prints a hardened systemd unit that runs `canopy serve` as a service.
//
// The unit runs the daemon as an unprivileged user with the file system read-only except the data directory
// (`ProtectSystem=strict` + `ReadWritePaths=`), no new privileges, no capabilities (unless the port is below 1024),
// a raised descriptor limit, SIGTERM to stop (the daemon drains within --drain-timeout; systemd waits a little
// longer before SIGKILL), and a restart on failure. `systemd-analyze verify` accepts it (CLITests).

import CanopyCore
import Foundation

struct ServiceCommand: Command {
    static let name = "service"
    static let abstract = "Print a hardened systemd unit that runs 'canopy serve'."
    static let usage = """
        canopy service --user <name> --data <absolute-dir> [--binary <path>] [--limit-nofile <n>]
                       [serve options: --port <n>, --host <addr>, --rules <file>, ...]
          --user          the account the daemon runs as (create it: useradd --system --home <data> <name>)
          --data          the data directory (absolute); the only path the service may write
          --binary        the canopy executable (default: this one, /proc/self/exe resolved)
          --limit-nofile  the service's open-file limit, LimitNOFILE (default: --max-connections + 4 x
                          --max-open-namespaces + 1024, at least 65536)
          Every other option is a 'canopy serve' option, checked as serve checks it and passed on; --rules and
          --public-keys files must be absolute paths outside /home (the unit sets ProtectHome).
        Install: canopy service --user canopy --data /var/lib/canopy > /etc/systemd/system/canopy.service
                 systemctl daemon-reload && systemctl enable --now canopy
        """

    /// Serve options that name files.
    static let fileOptions: Set<String> = ["--rules", "--public-keys"]

    var user = ""
    var dataDirectory = ""
    var binary = ""
    var limitNoFile: Int?
    /// The serve options given, in order, as words; parsed by `Serve` to check them.
    var serveWords: [String] = []
    var serve: Serve

    init(parsing arguments: inout Arguments) throws(UsageError) {
        var rest: [String] = []
        while let option = try arguments.nextOption() {
            switch option {
            case "--user": user = try arguments.value(for: option)
            case "--data": dataDirectory = try arguments.value(for: option)
            case "--binary": binary = try arguments.value(for: option)
            case "--limit-nofile": limitNoFile = try arguments.int(for: option, in: 1024...1_073_741_816)
            default:
                guard let entry = Serve.options.first(where: { $0.name == option }) else {
                    throw .unknownOption(option, command: Self.name)
                }
                rest.append(option)
                guard !entry.isFlag else { continue }
                let value = try arguments.value(for: option)
                // The service starts in `/` and cannot see /home (ProtectHome): files are named absolutely.
                if Self.fileOptions.contains(option), !value.hasPrefix("/") {
                    throw .invalidValue(option, value, expected: "an absolute path (the service runs in /)")
                }
                rest.append(value)
            }
        }
        guard !user.isEmpty else { throw .missingOption("--user") }
        guard !dataDirectory.isEmpty else { throw .missingOption("--data") }
        guard Self.isValidUserName(user) else {
            throw .invalidValue("--user", user, expected: "a user name of letters, digits, '_', '-' or '.'")
        }
        guard dataDirectory.hasPrefix("/"), !dataDirectory.contains("\n") else {
            throw .invalidValue("--data", dataDirectory, expected: "an absolute path")
        }
        while dataDirectory.count > 1 && dataDirectory.hasSuffix("/") { dataDirectory.removeLast() }
        // Checked as `canopy serve` will check them when the service starts, without the environment.
        var serveArguments = Arguments(rest + ["--data", dataDirectory])
        serve = try Serve(parsing: &serveArguments, environment: { _ in nil })
        serveWords = rest
        if binary.isEmpty {
            binary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        }
        guard binary.hasPrefix("/") else { throw .invalidValue("--binary", binary, expected: "an absolute path") }
    }

    func run() throws {
        print(unit(), terminator: "")
    }

    /// The unit file's text.
    func unit() -> String {
        let configuration = serve.configuration
        let nofile =
            limitNoFile
            ?? max(65_536, configuration.maxConnections + 4 * configuration.maxOpenNamespaces + 1024)
        let command = [binary, "serve", "--data", dataDirectory] + serveWords
        // systemd waits this long after SIGTERM before SIGKILL: the drain plus time to close the databases.
        let stopSeconds = configuration.drainTimeoutMilliseconds / 1000 + 15
        let privilegedPort = configuration.port > 0 && configuration.port < 1024
        var lines = [
            "# canopy.service -- generated by 'canopy service'; install as /etc/systemd/system/canopy.service",
            "[Unit]",
            "Description=Canopy realtime JSON database (Firebase protocols)",
            "After=network-online.target",
            "Wants=network-online.target",
            "",
            "[Service]",
            "Type=exec",
            "User=\(user)",
            "Group=\(user)",
            "ExecStart=" + command.map(Self.quoted).joined(separator: " "),
            "KillSignal=SIGTERM",
            "TimeoutStopSec=\(stopSeconds)s",
            "Restart=on-failure",
            "RestartSec=2s",
            "LimitNOFILE=\(nofile)",
            "UMask=0077",
            "",
            "# Hardening: the data directory is the only writable path.",
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "ReadWritePaths=\(Self.quoted(dataDirectory))",
            "ProtectHome=yes",
            "PrivateTmp=yes",
            "PrivateDevices=yes",
            "ProtectKernelTunables=yes",
            "ProtectKernelModules=yes",
            "ProtectKernelLogs=yes",
            "ProtectControlGroups=yes",
            "ProtectClock=yes",
            "ProtectHostname=yes",
            "ProtectProc=invisible",
            "RestrictSUIDSGID=yes",
            "RestrictRealtime=yes",
            "RestrictNamespaces=yes",
            "LockPersonality=yes",
            "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
            "SystemCallArchitectures=native",
            "SystemCallFilter=@system-service",
            "CapabilityBoundingSet=" + (privilegedPort ? "CAP_NET_BIND_SERVICE" : ""),
        ]
        if privilegedPort { lines.append("AmbientCapabilities=CAP_NET_BIND_SERVICE") }
        lines += ["", "[Install]", "WantedBy=multi-user.target", ""]
        return lines.joined(separator: "\n")
    }

    static func isValidUserName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first != "-", name.count <= 32 else { return false }
        return name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                || "_-.".unicodeScalars.contains($0)
        }
    }

    /// One word of a systemd command line or path setting: quoted when it holds spaces or quotes; `%` (a
    /// specifier), `$` (a variable) and `\` are escaped.
    static func quoted(_ word: String) -> String {
        var escaped = ""
        for character in word {
            switch character {
            case "%": escaped += "%%"
            case "$": escaped += "$$"
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            default: escaped.append(character)
            }
        }
        let needsQuotes =
            escaped.isEmpty
            || escaped.contains(where: { $0 == " " || $0 == "\t" || $0 == "\"" || $0 == "'" || $0 == ";" })
        return needsQuotes ? "\"\(escaped)\"" : escaped
    }
}
