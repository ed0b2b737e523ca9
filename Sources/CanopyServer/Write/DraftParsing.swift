// DraftParsing -- parses an event's draft (`pendingContent`) on the compute thread as soon as it changes, so that
// the organiser's next publish finds its items already parsed.
//
// A publish parses every item of the draft it has not parsed before (`ParsedItems` keeps the last parse, by node):
// at the `bench publish` defaults that is a textCSV item of 10,000 rows, about a fifth of the publish's time. The
// draft is written before it is published — by the console, the admin tool or the REST API — so the parse can run
// then, between the edit and the publish. A draft changed again before its parse started is parsed once, as it
// is then. The compute thread runs one job at a time: a publish that arrives while the draft is being parsed runs
// right after it and finds its items in the cache; it never waits for more than that one parse.
//
// It changes nothing a publish computes: the cache answers only for the very node it parsed (see `ParsedItems`),
// and a draft that does not parse (an invalid item) is left for the publish to report.

import CanopyCore
import CanopyPublish
import Synchronization

/// The draft parse of one namespace: at most one queued on the compute thread at a time. Thread-safe.
final class DraftParsing: Sendable {
    private struct State {
        /// The newest draft not yet parsed.
        var latest: Node?
        var isQueued = false
    }

    private let state = Mutex(State())
    private let items: ParsedItems

    init(items: ParsedItems) { self.items = items }

    /// Parses `draft` on `compute` (the namespace's compute thread), unless a parse queued there will take it.
    func parse(_ draft: Node, on compute: (@escaping @Sendable () -> Void) -> Void) {
        let queue = state.withLock { state in
            state.latest = draft
            defer { state.isQueued = true }
            return !state.isQueued
        }
        guard queue else { return }
        compute { [self] in run() }
    }

    private func run() {
        while let draft = state.withLock({ state -> Node? in
            guard let draft = state.latest else {
                state.isQueued = false
                return nil
            }
            state.latest = nil
            return draft
        }) {
            guard draft.childCount > 0 else { continue }
            // A draft that does not parse is the publish's to report.
            _ = try? PublishEngine.parseItems(draft, cache: items)
        }
    }
}
