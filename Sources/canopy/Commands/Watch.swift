// Watch -- `canopy watch`: an attendee simulator on the Swift client SDK; prints the live feed or a value.

import CanopyClient
import CanopyCore
import CanopyPublish
import Dispatch
import Foundation
import Synchronization

struct WatchCommand: Command {
    static let name = "watch"
    static let abstract = "Watch an event live as an attendee would (feed or value)."
    static let usage = """
        canopy watch (--feed | --path <path>) [--url <url>] [--ns <event>] [--token <token>] [--cache <dir>]
          --feed    show the attendee's merged feed; userId, tierId and groups come from the token's claims
          --path    show the live value at this path
          --url     daemon URL (default $CANOPY_URL, else http://127.0.0.1:9000)
          --token   the token to connect with, e.g. from 'canopy token mint --attendee' (default $CANOPY_TOKEN,
                    else the admin credential in <data>/admin.credential)
          --data    data directory whose admin.credential to use when no token is given (default ./canopy-data)
          --ns      the event (default: the token's ns claim)
          --cache   keep a local cache here: a later start shows the cached data at once, even offline
        Redraws on every change (on a terminal in place, otherwise one block per change followed by a
        '\(WatchScreen.separator)' line) with the connection state and pending writes; reconnects by itself when
        the daemon restarts. Ctrl-C or SIGTERM exits.
        """

    var remote = RemoteOptions()
    var showFeed = false
    var path: String?
    var cacheDirectory: String?

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            if try remote.parse(option, &arguments) { continue }
            switch option {
            case "--feed": showFeed = true
            case "--path": path = try arguments.value(for: option)
            case "--cache": cacheDirectory = try arguments.value(for: option)
            default: throw .unknownOption(option, command: Self.name)
            }
        }
        guard showFeed != (path != nil) else {
            throw UsageError(message: "pass exactly one of '--feed' and '--path <path>'")
        }
        if let path {
            do { _ = try Path(parsing: path) } catch {
                throw .invalidValue("--path", path, expected: "a database path (no . $ # [ ])")
            }
        }
    }

    func run() throws {
        let token = try remote.resolvedToken()
        var namespace = remote.namespace
        var attendee: Attendee?
        if showFeed {
            let claims = try WatchClaims.attendee(of: token)
            attendee = claims.attendee
            namespace = namespace ?? claims.namespace
        } else if namespace == nil {
            namespace = (try? WatchClaims.claims(of: token))?["ns"]?.stringValue
        }
        guard let namespace else { throw UsageError.missingOption("--ns") }
        guard let url = URL(string: remote.resolvedURL), url.host != nil else {
            throw CommandFailure("invalid daemon URL '\(remote.resolvedURL)': expected http://host:port")
        }
        let db = try Database(
            url: url, namespace: namespace, token: token,
            cacheDirectory: cacheDirectory.map { URL(fileURLWithPath: $0, isDirectory: true) })
        var screen = WatchScreen(namespace: namespace, subject: path ?? "")
        let content: AsyncThrowingStream<WatchScreen.Content, any Error>
        if let attendee {
            let feed = try PersonalizedContentFeed(db: db, attendee: attendee)
            screen.subject = Self.describe(attendee)
            content = Self.map(feed.values) { .feed($0) }
        } else {
            content = Self.map(db.ref(path ?? "").values) { .value($0.value, fromCache: $0.fromCache) }
        }
        let outcome = WatchOutcome()
        let signals = Self.exitOnSignals(db: db, outcome: outcome)
        Task { await Self.watch(db: db, screen: screen, content: content, outcome: outcome) }
        let result = outcome.wait()
        withExtendedLifetime(signals) {}
        try result.get()
    }

    static func describe(_ attendee: Attendee) -> String {
        let groups = attendee.groupIds.isEmpty ? "no groups" : "groups \(attendee.groupIds.joined(separator: ","))"
        return "feed of \(attendee.id) (tier \(attendee.tierId), \(groups))"
    }

    /// A stream of screen contents from a stream of anything.
    static func map<T: Sendable>(
        _ stream: AsyncThrowingStream<T, any Error>, _ transform: @escaping @Sendable (T) -> WatchScreen.Content
    ) -> AsyncThrowingStream<WatchScreen.Content, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await element in stream { continuation.yield(transform(element)) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// One change the screen shows.
    enum Change: Sendable {
        case connection(ConnectionState)
        case pendingWrites(Int)
        case content(WatchScreen.Content)
        case failed(any Error)
        case ended
    }

    /// Draws the screen on every change until the content stream ends or fails.
    static func watch(
        db: Database, screen initial: WatchScreen, content: AsyncThrowingStream<WatchScreen.Content, any Error>,
        outcome: WatchOutcome
    ) async {
        var screen = initial
        let (changes, sink) = AsyncStream<Change>.makeStream()
        let producers = [
            Task { for await state in db.connectionStates { sink.yield(.connection(state)) } },
            Task { for await count in db.pendingWriteCounts { sink.yield(.pendingWrites(count)) } },
            Task {
                do {
                    for try await value in content { sink.yield(.content(value)) }
                    sink.yield(.ended)
                } catch {
                    sink.yield(.failed(error))
                }
            },
        ]
        let terminal = isatty(STDOUT_FILENO) == 1
        var shown: String?
        var result: Result<Void, any Error> = .success(())
        loop: for await change in changes {
            switch change {
            case .connection(let state): screen.connection = state
            case .pendingWrites(let count): screen.pendingWrites = count
            case .content(let content): screen.content = content
            case .failed(let error):
                result = .failure(error)
                break loop
            case .ended: break loop
            }
            let text = screen.render()
            if text != shown { draw(text, terminal: terminal) }  // e.g. the first state and count: one block
            shown = text
        }
        for producer in producers { producer.cancel() }
        // The stream also ends when a signal closes the database: wait for that close to save the cache, or the
        // process could exit first and leave the next offline start without it.
        await db.close()
        outcome.finish(result)
    }

    static func draw(_ text: String, terminal: Bool) {
        if terminal {
            print("\u{1B}[H\u{1B}[2J" + text)  // home + clear screen, then redraw
        } else {
            print(text + "\n" + WatchScreen.separator)
        }
        fflush(nil)  // stdout; `stdout` itself is a C global Swift 6 will not touch off the main actor
    }

    /// Ctrl-C and SIGTERM: close the database (flushing the cache) and exit 0.
    static func exitOnSignals(db: Database, outcome: WatchOutcome) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                Task {
                    await db.close()
                    outcome.finish(.success(()))
                }
            }
            source.resume()
            return source
        }
    }
}

/// How `canopy watch` ended: the first of a failed stream, a closed database, or a signal.
final class WatchOutcome: Sendable {
    private let result = Mutex<Result<Void, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Records the outcome; later calls are ignored.
    func finish(_ outcome: Result<Void, any Error>) {
        let first = result.withLock { current in
            guard current == nil else { return false }
            current = outcome
            return true
        }
        if first { done.signal() }
    }

    /// Blocks until an outcome is recorded.
    func wait() -> Result<Void, any Error> {
        done.wait()
        return result.withLock { $0 } ?? .success(())
    }
}

#if canImport(Glibc)
    import Glibc
#endif
