// NATSOptions -- the servers to use and how to connect, ping, reconnect and wait.

/// One server: `host:port`, written `nats://host:port` or `host:port` (the default port is 4222).
public struct NATSServerAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `nats://host:port`, `host:port`, `[v6]:port` or `host`; nil for anything else.
    public init?(_ text: String) {
        var rest = Substring(text)
        if rest.hasPrefix("nats://") { rest = rest.dropFirst("nats://".count) }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }  // credentials in URLs: ignored
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { return nil }
            host = parts[0]
            portText = parts.count == 2 ? parts[1] : nil
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || ".-_:".contains($0) }) else { return nil }
        let port = portText.map { Int($0) } ?? 4222
        guard let port, (1...65535).contains(port) else { return nil }
        self.init(host: String(host), port: port)
    }

    /// A comma-separated list (`--cluster nats://a:4222,nats://b:4222`); nil if any entry is malformed.
    public static func list(_ text: String) -> [NATSServerAddress]? {
        let entries = text.split(separator: ",").map { $0.trimmingCharacters() }
        let addresses = entries.compactMap { NATSServerAddress(String($0)) }
        return addresses.count == entries.count && !addresses.isEmpty ? addresses : nil
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// How a ``NATSConnection`` connects and behaves when its server goes away.
public struct NATSOptions: Sendable {
    /// The servers to try, in order; servers announced in `INFO` `connect_urls` are added as they appear.
    public var servers: [NATSServerAddress]
    /// The client name the server shows in its monitoring.
    public var name: String = "canopy"
    public var user: String?
    public var password: String?
    public var token: String?
    /// Connecting to one server, up to its `PONG`.
    public var connectTimeout: Duration = .seconds(2)
    /// The default wait for a request's reply (JetStream API calls and publishes).
    public var requestTimeout: Duration = .seconds(5)
    /// With nothing received for this long the client sends `PING`; ...
    public var pingInterval: Duration = .seconds(2)
    /// ... and after this many unanswered, it drops the connection as stale and reconnects.
    public var maxPingsOutstanding: Int = 2
    /// Reconnect when the connection is lost (or give up and close).
    public var reconnect: Bool = true
    /// The first wait between two rounds over the server list; it doubles per round up to `maxReconnectWait`,
    /// with up to 50% random jitter so nodes restarting together do not reconnect in step.
    public var reconnectWait: Duration = .milliseconds(50)
    public var maxReconnectWait: Duration = .seconds(2)
    /// Rounds over the server list before the client gives up and closes; nil: until ``NATSConnection/close()``.
    public var maxReconnectRounds: Int?
    /// How long a publish, subscribe or request waits for a lost connection to come back before failing.
    public var reconnectTimeout: Duration = .seconds(5)
    /// Undelivered messages a queue subscription may hold before it drops new ones (slow consumer).
    public var maxPendingMessages: Int = 65_536
    /// The parser's limits. A message may be as large as the smaller of `parserLimits.maxPayload` and the
    /// server's `max_payload`, plus 64 KiB for the headers a server adds to messages it makes (JetStream's).
    public var parserLimits = NATSParserLimits()

    public init(servers: [NATSServerAddress]) {
        self.servers = servers
    }
}

extension Substring {
    fileprivate func trimmingCharacters() -> Substring {
        var text = self
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}
