// RESTHandler+Head -- requests decided from their head, before their body is read (Architecture.md#Request-bodies).
//
// Everything the REST API would refuse without looking at the body is refused here, with the answer the full
// request would get: a bad method override, path, namespace, parameter or credential; a namespace whose rules
// cannot be loaded; the rules and admin endpoints for someone who is not an administrator; and a write that no
// rule could allow this identity at this path whatever the body holds (`AccessPolicy.couldAllowWrite`, which
// only says no when it is certain). Such a body is then read and dropped, never buffered or parsed.
// A request whose namespace is still loading, and anything not certain, is read and decided as usual.

import CanopyCore
import CanopyNet
import CanopyRules

extension RESTHandler {
    /// An update (PATCH) body of at most this many bytes is always read: it could be `{}`, an update that writes
    /// nothing and is allowed to anyone. A larger one is taken to name at least one location.
    static let smallestUpdateDecidedFromHead = 1024

    func refusalBeforeBody(_ head: HTTPRequest) -> HTTPResponse? {
        do {
            try refuseFromHead(head)
            return nil
        } catch {
            return .error(error)
        }
    }

    /// Throws what the request would certainly be answered, whatever its body; returns when the body must be read.
    private static let endpointsDecidingThemselves: Set<String> = [
        "/.canopy/health", "/.canopy/ready", "/.canopy/metrics", "/.canopy/backup", "/.canopy/restore",
        "/.canopy/namespaces",
    ]

    private func refuseFromHead(_ head: HTTPRequest) throws {
        if head.method == "OPTIONS" { return }
        if let realtime = context.realtime, realtime.handles(head) { return }
        let method = try effectiveMethod(head)
        var params: [String: String] = [:]
        for item in head.query { params[item.name] = item.value }
        // Operations endpoints answer for themselves: health and readiness without credentials (405 for other
        // methods), metrics, backups and restores with their own checks.
        if Self.endpointsDecidingThemselves.contains(head.path) || ConsoleEndpoint.handles(head.path) { return }
        if head.path.hasPrefix("/.canopy/") || head.path == "/.settings/rules.json" {
            let name = try namespaceName(head, params: params)
            let identity = try identify(head, params: params, namespace: name)
            guard !context.registry.mustWait(for: name) else { return }
            if head.path == "/.settings/rules.json" {
                guard identity.isAdmin else { throw RESTError.permissionDenied }
                return
            }
            let action = String(head.path.dropFirst("/.canopy/".count))
            let namespace = try context.namespace(name, create: false)
            let decision = context.authorize(
                .admin(action), at: .root, as: identity, in: name, namespace: namespace,
                now: context.configuration.clock.nowMilliseconds())
            guard decision.allowed else { throw WriteError.permissionDenied(reason: decision.reason) }
            return
        }
        guard head.path.hasSuffix(".json"), !head.path.hasPrefix("/.") || head.path.hasPrefix("/.json") else { return }
        let request = try parseDataRequest(head, method: method)
        let reach: CompiledRules.WriteReach
        switch method {
        case "PUT": reach = .path
        case "POST": reach = .child
        case "PATCH":
            guard let length = head.header("content-length").flatMap(Int.init),
                length > Self.smallestUpdateDecidedFromHead
            else { return }
            reach = .descendants
        default: return  // GET, DELETE: their body is not used; 405 needs no body either
        }
        guard !context.registry.mustWait(for: request.namespaceName) else { return }
        let namespace = try context.namespace(request.namespaceName, create: false)
        let policy = namespace?.policy ?? context.defaultPolicy
        guard !policy.couldAllowWrite(at: request.path, reach: reach, as: request.identity) else { return }
        Logger(label: "canopy.rules").debug(
            "rules.denied_before_body", ["ns": request.namespaceName, "path": request.path.description])
        context.registry.metrics.countDenial(.write)
        throw WriteError.permissionDenied(reason: "no rule could allow this write")
    }
}
