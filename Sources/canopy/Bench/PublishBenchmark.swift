// PublishBenchmark -- `canopy bench publish`: one atomic publish vs the seed design's eight writes.
//
// Runs a real daemon as a child process, subscribes attendee sockets to their user, tier and public content,
// publishes revision 0 of a generated event (setup), then measures revision 0 → 1 as ONE `POST
// /.canopy/publish` and revision 1 → 0 as the seed design's eight client-side writes, against the same server
// and subscribers. Both transitions change the same locations, so the rows are comparable. Then (unless
// `--no-incremental`) one publish over what the replay wrote (nothing changes; the daemon compares every derived
// location, none of which a publish made) and the incremental case: one item's text edited in `pendingContent`,
// then one POST — only the listeners of that item's locations must hear of it, and only of that item.

import CanopyCore
import CanopyPublish
import Foundation

/// `canopy bench publish [--items N] [--attendees N] [--tiers N] [--groups N] [--sockets N] [--seed N]
/// [--rounds N] [--no-incremental] [--background-writes N] [--server BINARY]`.
struct PublishBenchmark {
    var shape = PublishBenchShape()
    var sockets = 1000
    var seed: UInt64 = 2026
    var rounds = 1
    var incremental = true
    /// Small writes a second elsewhere in the event while the rows are measured (0: none).
    var backgroundWrites = 0
    /// Another `canopy` to run as the daemon (to compare builds); default this one.
    var serverBinary: String?

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--items": shape.items = try arguments.int(for: option, in: 1...100_000)
            case "--attendees": shape.attendees = try arguments.int(for: option, in: 1...1_000_000)
            case "--tiers": shape.tiers = try arguments.int(for: option, in: 1...10_000)
            case "--groups": shape.groups = try arguments.int(for: option, in: 1...10_000)
            case "--sockets": sockets = try arguments.int(for: option, in: 1...20_000)
            case "--seed": seed = UInt64(try arguments.int(for: option))
            case "--rounds": rounds = try arguments.int(for: option, in: 1...20)
            case "--no-incremental": incremental = false
            case "--background-writes": backgroundWrites = try arguments.int(for: option, in: 0...10_000)
            case "--server": serverBinary = try arguments.value(for: option)
            default: throw .unknownOption(option, command: "bench publish")
            }
        }
        sockets = min(sockets, shape.attendees)
    }

    /// One measured row.
    struct Row {
        var name: String
        var writes: Int
        var commitMilliseconds: Double
        var deliveredMilliseconds: Double?
        var observation: PublishBenchObservation
        /// CPU time the daemon spent (all threads) from the first write until every subscriber converged.
        var serverCPUMilliseconds: Double?
    }

    func run() throws {
        let event = PublishBenchEvent(shape: shape, seed: seed)
        let contents = [event.pendingContent(revision: 0), event.pendingContent(revision: 1)]
        let fans = try contents.map { try Self.fanOut($0) }
        let expected = fans.map(Self.expectedLocations)
        print(
            """
            canopy bench publish: \(shape.items) items (one textCSV with \(shape.attendees) rows), \
            \(shape.attendees) attendees, \(shape.tiers) tiers, \(shape.groups) groups; \
            \(sockets) sockets x 3 listens (user, tier, public content); seed \(seed)
            fan-out: \(fans[0].locationCount) locations (\(fans[0].users.count) users, \(fans[0].tiers.count) tiers, \
            public \(fans[0].publicContent.count) items); pendingContent \(contents[0].serialized().utf8.count) bytes
            """)

        let server = try PublishBenchServer(namespace: "bench-publish", binary: serverBinary)
        defer { server.stop() }
        let paths = (0..<sockets).map { i -> [Path] in
            let attendee = i * shape.attendees / sockets
            return [
                PublishLayout.userContent(event.attendeeID(attendee)),
                PublishLayout.tierContent(event.tier(ofAttendee: attendee)), PublishLayout.publicContent,
            ]
        }
        let subscribers = try PublishBenchSubscribers(
            port: server.port, namespace: server.namespace, credential: server.adminCredential, paths: paths,
            serverProcess: server.processID)
        defer { subscribers.close() }
        let connectStart = benchNow()
        try subscribers.connect()
        print("subscribed \(sockets) sockets in \(Int(Self.milliseconds(benchNow() - connectStart))) ms")

        // Setup (not measured): publish revision 0 atomically and wait until every subscriber holds it.
        try server.put(PublishLayout.pendingContent, contents[0])
        subscribers.begin(expected: Self.lookup(expected[0]))
        try server.request("POST", "/.canopy/publish")
        guard subscribers.settle(timeoutSeconds: 180) else {
            throw CommandFailure("setup publish: subscribers did not converge (\(subscribers.observation().unmatchedListens) listens differ)")
        }

        let background = backgroundWrites > 0 ? PublishBenchBackgroundWriter(perSecond: backgroundWrites, server: server) : nil
        var atomic: [Row] = []
        var replay: [Row] = []
        for round in 1...rounds {
            let suffix = rounds > 1 ? " #\(round)" : ""
            // Atomic: revision 0 → 1 in one POST.
            try server.put(PublishLayout.pendingContent, contents[1])
            atomic.append(
                try measure("atomic publish" + suffix, writes: 1, expected: expected[1], subscribers) {
                    try server.request("POST", "/.canopy/publish")
                })
            // Seed design: revision 1 → 0 as eight separate writes computed client-side.
            try server.put(PublishLayout.pendingContent, contents[0])
            replay.append(
                try measure("8-write replay" + suffix, writes: 8, expected: expected[0], subscribers) {
                    try Self.replaySeedWrites(fans[0], content: contents[0], server)
                })
        }
        var afterReplay: Row?
        var edits: [Row] = []
        if incremental {
            // The replay wrote every derived location itself, so the daemon knows nothing of how they were made:
            // the next publish compares them all. Timed as its own row; the edits then follow a publish, as an
            // organiser's do.
            afterReplay = try measure("publish after the replay", writes: 1, expected: expected[0], subscribers) {
                try server.request("POST", "/.canopy/publish")
            }
            var content = contents[0]
            for round in 1...rounds {
                let (key, edited) = try Self.editOneItem(content, fan: fans[0], listened: Set(paths.joined()), round)
                content = edited
                try server.put(PublishLayout.pendingContent.child(key), edited[key] ?? .null)
                edits.append(
                    try measure(
                        "incremental (\(key))" + (rounds > 1 ? " #\(round)" : ""), writes: 1,
                        expected: Self.expectedLocations(try Self.fanOut(edited)), subscribers
                    ) { try server.request("POST", "/.canopy/publish") })
            }
        }
        let backgroundLine = background?.stop()
        PublishBenchReport.print(atomic: atomic, replay: replay, afterReplay: afterReplay, incremental: edits)
        if let backgroundLine { print(backgroundLine) }
    }

    /// `content` with the text of one tier-targeted item edited (an item some sockets listen to, not all), and
    /// that item's key. `round` varies the item and the text.
    static func editOneItem(_ content: JSONValue, fan: FanOut, listened: Set<Path>, _ round: Int) throws
        -> (key: String, content: JSONValue)
    {
        var candidates = Set<String>()
        for (tier, items) in fan.tiers where listened.contains(PublishLayout.tierContent(tier)) {
            candidates.formUnion(items.keys)
        }
        let keys = candidates.sorted()
        guard !keys.isEmpty, case .object(var members) = content else {
            throw CommandFailure("incremental round: no tier-targeted item reaches a subscriber")
        }
        let key = keys[(round * 7919) % keys.count]
        guard let index = members.firstIndex(where: { $0.key == key }), case .object(var fields) = members[index].value
        else { throw CommandFailure("incremental round: item \(key) is not an object") }
        if let text = fields.firstIndex(where: { $0.key == "text" }) {
            fields[text] = JSONMember("text", .string("Edited in round \(round)"))
        } else {
            fields.append(JSONMember("text", .string("Edited in round \(round)")))
        }
        members[index] = JSONMember(key, .object(fields))
        return (key, .object(members))
    }

    /// Runs `body` (the writes) and waits until every subscriber converged.
    private func measure(
        _ name: String, writes: Int, expected: [Path: Node], _ subscribers: PublishBenchSubscribers,
        _ body: () throws -> Void
    ) throws -> Row {
        subscribers.begin(expected: Self.lookup(expected))
        let cpuBefore = Self.cpuNanoseconds(process: subscribers.serverProcess)
        let start = benchNow()
        try body()
        let committed = benchNow()
        let settled = subscribers.settle(timeoutSeconds: 180)
        let observation = subscribers.observation()
        let cpuAfter = Self.cpuNanoseconds(process: subscribers.serverProcess)
        if !settled { print("warning: \(name): \(observation.unmatchedListens) listens did not converge in 180 s") }
        return Row(
            name: name, writes: writes, commitMilliseconds: Self.milliseconds(committed - start),
            deliveredMilliseconds: observation.lastMatchNanoseconds.map { Self.milliseconds($0 &- start) },
            observation: observation,
            serverCPUMilliseconds: cpuBefore.flatMap { b in cpuAfter.map { Self.milliseconds($0 &- b) } })
    }

    /// The seed design's publish: wipe public, users and tiers, copy the fan-out to each, set content and time.
    static func replaySeedWrites(_ fan: FanOut, content: JSONValue, _ server: PublishBenchServer) throws {
        try server.put(PublishLayout.publicContent, .null)
        try server.put(PublishLayout.users, .null)
        try server.put(PublishLayout.tiers, .null)
        var users: [JSONMember] = []
        var tiers: [JSONMember] = []
        var publicContent = JSONValue.null
        for (path, node) in fan.locations() {
            if path == PublishLayout.publicContent {
                publicContent = node.json()
            } else if let relative = path.relative(to: PublishLayout.users) {
                users.append(JSONMember(relative.relativeDescription, node.json()))
            } else if let relative = path.relative(to: PublishLayout.tiers) {
                tiers.append(JSONMember(relative.relativeDescription, node.json()))
            }
        }
        try server.put(PublishLayout.publicContent, publicContent)
        try server.patch(PublishLayout.users, .object(users))
        try server.patch(PublishLayout.tiers, .object(tiers))
        try server.put(PublishLayout.content, content)
        try server.put(PublishLayout.lastPublishedAt, [".sv": "timestamp"])
    }

    static func fanOut(_ content: JSONValue) throws -> FanOut {
        do {
            return try PublishEngine.fanOut(pending: try Node.from(json: content), settings: PublishSettings())
        } catch let error as any CanopyError {
            throw CommandFailure("generated event is invalid: \(error.userMessage)")
        }
    }

    /// Each derived location's content as a subscriber receives it (through a JSON round trip).
    static func expectedLocations(_ fan: FanOut) -> [Path: Node] {
        var out: [Path: Node] = [:]
        for (path, node) in fan.locations() {
            out[path] = (try? Node.from(json: JSONValue.parse(node.json(export: true).serialized()))) ?? node
        }
        return out
    }

    static func lookup(_ locations: [Path: Node]) -> @Sendable (Path) -> Node {
        { locations[$0] ?? .empty }
    }

    static func milliseconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e6 }

    /// The daemon's CPU time so far, user and system, in ns, from `/proc/<pid>/stat` (`CPUSampler.cpuSeconds`:
    /// 10 ms clock ticks). It counts threads that have exited too: the sum of the live threads' `schedstat` it
    /// replaced went backwards when a store thread ended between two samples, and the unsigned difference printed
    /// 18446744073658.9 ms. Includes the quiet wait after the last message, which costs next to nothing. nil if
    /// unreadable.
    static func cpuNanoseconds(process: Int32) -> UInt64? {
        CPUSampler.cpuSeconds(stat: "/proc/\(process)/stat").map { UInt64(($0 * 1e9).rounded()) }
    }
}
