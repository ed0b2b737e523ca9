// NamespaceRegistry -- opens each namespace on first use (its SQLite file, once it has one) and keeps it open.

import CanopyCore
import CanopyNet
import CanopyRules
import CanopyStore

/// All namespaces of a daemon. Loop-confined.
public final class NamespaceRegistry {
    private let configuration: ServerConfiguration
    private let loop: EventLoop
    private var open: [String: Namespace] = [:]
    /// `open.count` after the last `forgetUnused()`; the next one runs once the count has doubled.
    private var countAfterSweep = 0
    private let directory: DataDirectory
    /// Rules every namespace starts with when it has none of its own (from `--rules`, else admin-only).
    private let defaultRules: (policy: any AccessPolicy, source: String?)
    private let logger = Logger(label: "canopy.server")
    /// Called when a namespace is opened (the realtime layer hooks commits here).
    public var onOpen: ((Namespace) -> Void)?

    init(configuration: ServerConfiguration, loop: EventLoop) throws {
        self.configuration = configuration
        self.loop = loop
        self.directory = try DataDirectory(path: configuration.dataDirectory)
        if let file = configuration.rulesFile {
            // Unreadable or invalid: the daemon does not start (`canopy serve` prints why and exits with 1).
            let loaded = try RulesFile(path: file).load()
            defaultRules = (RulesPolicy(rules: loaded.rules), loaded.source)
        } else if configuration.emulator {
            // The Firebase RTDB emulator starts every namespace with open rules ({".read": true, ".write": true};
            // firebase-tools #2483) and the JS SDK's useEmulator() sends no credential at all, so emulator mode
            // does the same. Without --emulator, no rules means admin-only (secure by default).
            let open = #"{"rules": {".read": true, ".write": true}}"#
            defaultRules = (RulesPolicy(rules: try CompiledRules.compile(source: open)), open)
        } else {
            defaultRules = (AdminOnlyPolicy(), nil)
        }
        loop.addBeforeSleepHook { [weak self] in self?.flushAll() }
    }

    /// The namespace called `name`, opened (or created when `create`) on first use; nil if it does not exist.
    public func namespace(_ name: String, create: Bool) throws -> Namespace? {
        if let existing = open[name] { return existing }
        let file = try directory.storePath(for: name)
        let exists = fileExists(file)
        if !create && !exists && rulesFile(for: name).isAbsent { return nil }
        if open.count >= max(64, 2 * countAfterSweep) { forgetUnused() }
        var options = StoreOptions(synchronous: configuration.synchronousFull ? .full : .normal)
        options.beforeSync = configuration.beforeWALSync
        options.maximumPageCount = configuration.maximumPagesPerNamespace
        // A namespace that has no file yet gets one at its first write (see `Namespace.store`).
        let create = { [options] () throws(StoreError) in try NamespaceStore(path: file, options: options) }
        let store = exists ? try create() : nil
        let namespace = try Namespace(
            name: name, store: store, openStore: create, loop: loop, policy: defaultRules.policy)
        namespace.rulesSource = defaultRules.source
        loadSavedRules(into: namespace)
        open[name] = namespace
        logger.info("ns.open", ["ns": name])
        onOpen?(namespace)
        return namespace
    }

    /// The policy of namespaces that have no rules of their own (and of reads of namespaces with no data).
    var defaultPolicy: any AccessPolicy { defaultRules.policy }
    /// The rules text `GET /.settings/rules.json` shows for such namespaces.
    var defaultRulesSource: String { defaultRules.source ?? #"{"rules": {".read": false, ".write": false}}"# }

    /// Every namespace currently open.
    public var openNamespaces: [Namespace] { Array(open.values) }

    /// Replaces a namespace's rules and persists them next to its database file. This is also how an admin
    /// repairs a namespace whose saved rules could not be loaded: service resumes with the new rules.
    ///
    /// - Throws: `RulesFileError` (`.notSaved`) when the file cannot be written; the rules in force stay.
    func setRules(_ source: String, compiled: CompiledRules, for namespace: Namespace) throws(RulesFileError) {
        let file = rulesFile(for: namespace.name)
        do {
            try file.save(source)
        } catch {
            logger.error("rules.save_failed", ["ns": namespace.name, "file": file.path, "error": error.reason])
            throw error
        }
        if namespace.rulesFailure != nil { logger.notice("rules.repaired", ["ns": namespace.name]) }
        namespace.policy = RulesPolicy(rules: compiled)
        namespace.rulesSource = source
        namespace.rulesFailure = nil
    }

    /// Gives a namespace being opened its saved rules, if it has any. Saved rules that cannot be read or compiled
    /// fail closed, loudly: the namespace refuses service (see `Namespace.rulesFailure`) and the log says which
    /// file and why. Falling back to the default rules instead could open data the saved rules protect.
    private func loadSavedRules(into namespace: Namespace) {
        let file = rulesFile(for: namespace.name)
        if file.isAbsent { return }
        do {
            let saved = try file.load()
            namespace.policy = RulesPolicy(rules: saved.rules)
            namespace.rulesSource = saved.source
        } catch {
            logger.error(
                "rules.load_failed",
                ["ns": namespace.name, "file": file.path, "error": error.reason, "effect": "namespace refused"])
            namespace.policy = DenyAllPolicy()
            namespace.rulesSource = nil
            namespace.rulesFailure =
                "The security rules of namespace '\(namespace.name)' could not be loaded "
                + "(\(error.problem == .invalid ? "invalid: " : "")\(error.reason)). It refuses every request until "
                + "an admin replaces them with PUT /.settings/rules.json."
        }
    }

    private func rulesFile(for name: String) -> RulesFile {
        RulesFile(path: configuration.dataDirectory + "/" + name + ".rules.json")
    }

    /// Forgets namespaces that exist only in memory (never written, so no file) and that nothing uses any more:
    /// requests naming ever new namespaces that do not exist must not grow memory without bound. Runs when the
    /// number of open namespaces has doubled since the last time, so it costs O(1) per opened namespace.
    /// A namespace is in use while anything else holds it (a session, a listen group, a pending request).
    func forgetUnused() {
        let before = open.count
        for name in Array(open.keys) where open[name]?.isEmptyWithoutFile == true {
            if isKnownUniquelyReferenced(&open[name]!) { open[name] = nil }
        }
        countAfterSweep = open.count
        logger.debug("ns.forgotten", ["count": "\(before - open.count)", "open": "\(open.count)"])
    }

    private func flushAll() {
        for namespace in open.values { namespace.flush() }
    }

    /// Flushes and closes every namespace (graceful shutdown).
    func closeAll() {
        for namespace in open.values { namespace.close() }
        open.removeAll()
    }
}

func fileExists(_ path: String) -> Bool {
    access(path, F_OK) == 0
}

#if canImport(Glibc)
    import Glibc
#endif
