// RESTEarlyRead -- a REST GET of a namespace whose tree is still loading, answered from its file.
//
// Loading a large namespace takes seconds (Architecture.md#Loading-a-namespace). A GET names one path; the rows
// of that subtree (or, for `shallow=true`, one index search per child) are read from the file on a store thread
// while the whole tree loads on another, and the answer goes out as soon as they are there. The request also
// waits for the load as every request does; whichever comes first answers, once.
//
// The rules decide such a read against a tree that holds only the rows read. That is exact only if the rules
// look at nothing else: `CoveredRuleData` notes every data access outside the paths read, and such a decision is
// thrown away (the request then waits for the load). No write can commit while the tree is loading (writes wait
// too), so the file holds exactly what the loaded tree will.
import CanopyCore
import CanopyNet
import CanopyRules
import CanopyStore

/// The paths a partly read tree holds in full, and whether a rule looked outside them. Loop-confined.
public final class ReadCoverage: @unchecked Sendable {
    public let paths: [[String]]
    public private(set) var missed = false

    public init(paths: [[String]]) { self.paths = paths }

    /// Whether `path` lies at or below a path read in full; notes a miss when not.
    public func covers(_ path: [String]) -> Bool {
        for covered in paths where path.count >= covered.count {
            if zip(covered, path).allSatisfy({ sameKey($0, $1) }) { return true }
        }
        missed = true
        return false
    }
}

/// The rules' view of a partly read tree: answers inside the coverage, notes a miss (and answers as if empty)
/// outside it.
struct CoveredRuleData: RuleDataTree {
    let data: NodeRuleData
    let coverage: ReadCoverage

    func primitive(at path: [String]) -> JSONValue? { coverage.covers(path) ? data.primitive(at: path) : nil }
    func exists(at path: [String]) -> Bool { coverage.covers(path) && data.exists(at: path) }
    func hasChildren(at path: [String]) -> Bool { coverage.covers(path) && data.hasChildren(at: path) }
    func childKeys(at path: [String]) -> [String] { coverage.covers(path) ? data.childKeys(at: path) : [] }
    func priority(at path: [String]) -> JSONValue? { coverage.covers(path) ? data.priority(at: path) : nil }
}

/// What an early read found: a tree holding the rows read, which paths it holds in full, and the policy the
/// namespace will have once loaded.
struct EarlyTree {
    var root: Node
    var coverage: ReadCoverage
    var policy: any AccessPolicy
}

extension EarlyTree {
    /// What a listen of `path` (through `query`) starts from, as the loaded tree would give it: `.denied` when the
    /// saved rules refuse it, nil when they looked at data not read (the listen waits for the load).
    enum ListenStart {
        case value(Node)
        case denied
    }

    func listenStart(at path: Path, query: QuerySpec?, as identity: Identity, in name: String, now: Int64)
        -> ListenStart?
    {
        let decision = policy.authorize(
            .read(query: query), at: path, as: identity, in: name, old: root, new: nil, now: now, coverage: coverage)
        if coverage.missed { return nil }
        guard decision.allowed else { return .denied }
        let node = root.node(at: path)
        return .value(query.map { $0.window(of: node) } ?? node)
    }
}

/// Thrown by `handleGet` when an early read cannot be answered exactly; the request waits for the load.
struct EarlyReadNeedsTree: Error {}

extension NamespaceRegistry {
    /// Early reads running at once; more wait in `earlyReadQueue`, up to `earlyReadsQueued`.
    static let earlyReadsAtOnce = 16
    /// Early reads waiting their turn; past it a read waits for the load like any request.
    static let earlyReadsQueued = 4096

    /// Reads `path` of `name` from its file while its tree loads; `done` gets nil when that is not possible (not
    /// loading, a cluster node, rules that cannot be loaded, too many rows or waiting reads, a store error), on
    /// the loop.
    func readEarly(_ name: String, at path: Path, shallow: Bool, _ done: @escaping (EarlyTree?) -> Void) {
        guard cluster == nil, var entry = loading[name], entry.isStarted else { return done(nil) }
        if earlyReads >= Self.earlyReadsAtOnce {
            guard earlyReadQueue.count < Self.earlyReadsQueued else { return done(nil) }
            earlyReadQueue.append { [weak self] in
                guard let self else { return done(nil) }
                self.readEarly(name, at: path, shallow: shallow, done)
            }
            return
        }
        if entry.earlyPolicy == nil {
            entry.earlyPolicy = .some(savedPolicy(for: name))
            loading[name] = entry
        }
        guard let policy = entry.earlyPolicy ?? nil else { return done(nil) }
        earlyReads += 1
        let loop = self.loop
        let pool = self.pool
        let limit = configuration.earlyReadRowLimit
        let bound = LoopBound(self, loop: loop)
        let held = LoopHeld((done: done, policy: policy), loop: loop)
        let run: (NamespaceStore?) -> Void = { store in
            guard let store else {
                bound.value?.earlyReadEnded()
                return done(nil)
            }
            pool.run {
                let tree = Self.peek(store, at: path, shallow: shallow, limit: limit)
                loop.execute {
                    bound.value?.earlyReadEnded()
                    let (done, policy) = held.value
                    done(tree.map { EarlyTree(root: $0.root, coverage: ReadCoverage(paths: $0.covered), policy: policy) })
                }
            }
        }
        if let store = entry.store { return run(store) }
        entry.earlyReads.append(run)
        loading[name] = entry
    }

    /// Calls `body` once the load of `name` has opened its store (true), or has failed before (false); at once
    /// when it has already opened it, or when `name` is not loading (false).
    func whenStoreOpened(_ name: String, _ body: @escaping (Bool) -> Void) {
        guard var entry = loading[name], entry.isStarted else { return body(false) }
        if entry.store != nil { return body(true) }
        entry.earlyReads.append { store in body(store != nil) }
        loading[name] = entry
    }

    /// One early read ended: the next waiting one starts.
    private func earlyReadEnded() {
        earlyReads -= 1
        if !earlyReadQueue.isEmpty { earlyReadQueue.removeFirst()() }
    }

    /// The tree holding what a read of `path` needs, and the paths it holds in full; nil when too large or on
    /// an error (the load reports errors). On a store thread.
    private static func peek(_ store: NamespaceStore, at path: Path, shallow: Bool, limit: Int) -> (
        root: Node, covered: [[String]]
    )? {
        let builder = NodeBuilder()
        do {
            if shallow {
                // The children's subtrees are not read: a placeholder stands for each object child, and no rule may
                // look at any data (nothing is held in full).
                guard let found = try store.peekChildren(at: path.segments, maxChildren: limit) else {
                    return nil
                }
                if let leaf = found.leaf { try builder.add(.leaf(path: path.segments, value: leaf, priority: nil)) }
                for (key, child) in found.children {
                    switch child {
                    case .leaf(let value): try builder.add(.leaf(path: path.segments + [key], value: value, priority: nil))
                    case .object:
                        try builder.add(.leaf(path: path.segments + [key, "placeholder"], value: .bool(true), priority: nil))
                    }
                }
                return (builder.finish(), [])
            }
            guard let rows = try store.peekSubtree(at: path.segments, maxRows: limit) else { return nil }
            for row in rows { try builder.add(row.record) }
            return (builder.finish(), [path.segments])
        } catch {
            return nil
        }
    }
}

extension RESTHandler {
    /// Answers a plain REST GET of a namespace that is loading from its file as soon as the part it reads is
    /// there, or when the load ends, whichever is first. False (nothing done) for any other request.
    func answerEarly(_ request: HTTPRequest, _ responder: HTTPResponder) -> Bool {
        // The cheap checks first: this runs for every request, and a GET of an open namespace must not be parsed
        // twice. The namespace is named as `whenNamespaceReady` names it (the last `ns` wins, as in REST).
        let registry = context.registry
        guard request.method == "GET", registry.cluster == nil, request.path.hasSuffix(".json"),
            !request.path.hasPrefix("/.") || request.path == "/.json",
            let name = request.query.last(where: { $0.name == "ns" && !$0.value.isEmpty })?.value
                ?? (try? context.namespaceName(request, params: [:])),
            registry.mustWait(for: name), registry.closing[name] == nil,
            context.realtime?.handles(request) != true,
            let data = try? parseDataRequest(request, method: "GET"), data.namespaceName == name
        else { return false }
        // A `.priority` read reads its parent; a shallow read only the children's keys.
        let priorityOf = data.path.lastKey.flatMap { sameKey($0, Key.priority) ? data.path.parent : nil }
        // A stream ignores `shallow`, as it does once loaded.
        let shallow = data.params["shallow"] == "true" && request.header("accept")?.contains("text/event-stream") != true
        // Whichever answers first, the other does nothing: `whenNamespaceReady` skips a responder that has answered.
        context.whenNamespaceReady(for: request, responder) { [self] in handleLoadedRequest(request, responder) }
        guard !responder.hasAnswered else { return true }
        context.registry.readEarly(data.namespaceName, at: priorityOf ?? data.path, shallow: shallow) { [self] tree in
            guard let tree, !responder.hasAnswered, context.registry.open[data.namespaceName] == nil else { return }
            do {
                try handleGet(data, responder, early: tree)
            } catch is EarlyReadNeedsTree {
                return
            } catch {
                responder.respond(.error(error))
            }
            context.registry.metrics.countEarlyRead()
        }
        return true
    }
}
