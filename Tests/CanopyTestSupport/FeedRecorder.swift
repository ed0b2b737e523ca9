// FeedRecorder -- test support shared by the client and integration tests: records a feed's stream.

import CanopyClient
import Synchronization

/// Records every feed a PersonalizedContentFeed yields, and how its stream ended.
public final class FeedRecorder: Sendable {
    private let feeds = Mutex<[[FeedItem]]>([])
    private let failure = Mutex<(any Error)?>(nil)
    private let task = Mutex<Task<Void, Never>?>(nil)

    public init(_ feed: PersonalizedContentFeed) {
        let stream = feed.values
        task.withLock {
            $0 = Task { [self] in
                do {
                    for try await items in stream { feeds.withLock { $0.append(items) } }
                } catch {
                    failure.withLock { $0 = error }
                }
            }
        }
    }

    /// Every feed so far, oldest first.
    public var all: [[FeedItem]] { feeds.withLock { $0 } }
    /// The keys of every feed so far.
    public var keys: [[String]] { all.map { $0.map(\.key) } }
    /// The latest feed.
    public var last: [FeedItem]? { feeds.withLock { $0.last } }
    /// The error that ended the stream, if one did.
    public var error: (any Error)? { failure.withLock { $0 } }
    public func cancel() { task.withLock { $0?.cancel() } }
}
