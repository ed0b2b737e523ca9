// OperationsEndpoints -- health, readiness and metrics for load balancers, supervisors and Prometheus.
//
//   GET /.canopy/health    200 "ok" while the process serves requests (liveness); unauthenticated
//   GET /.canopy/ready     200 "ready" when the store threads answer, the data directory takes a write and an
//                          fsync, and the daemon is not draining; 503 with the reason otherwise; unauthenticated
//   GET /.canopy/metrics   the Prometheus text exposition (MetricsExposition.swift); on the main port only with
//                          the admin credential (or an admin token), on `--metrics-port` (loopback) without
//
// None of them waits for a namespace or shows any stored data. The readiness probe runs on a store thread (a
// write and an fsync must not stall the loop); concurrent probes share one.

import CanopyCore
import CanopyNet
import CanopyStore

#if canImport(Glibc)
    import Glibc
#endif

/// One of the operations endpoints.
enum OperationsEndpoint: String {
    case health = "/.canopy/health"
    case ready = "/.canopy/ready"
    case metrics = "/.canopy/metrics"

    /// The Prometheus text format's media type (exposition format 0.0.4).
    static let metricsContentType = "text/plain; version=0.0.4; charset=utf-8"
    /// The name of the file the readiness probe writes, syncs and removes in the data directory.
    static let probeFileName = ".canopy-ready-probe"
    /// A probe that has not finished after this long answers 503 (the store threads are stuck or swamped).
    static let probeTimeoutMs: Int64 = 5_000
}

extension ServerContext {
    /// Answers `endpoint`; `open` skips the credential check of the metrics (the loopback metrics port).
    func handleOperations(
        _ endpoint: OperationsEndpoint, _ request: HTTPRequest, _ responder: HTTPResponder, open: Bool
    ) {
        guard request.method == "GET" else {
            responder.respond(.error(RESTError(405, "Method \(request.method) is not allowed; use GET.")))
            return
        }
        switch endpoint {
        case .health:
            responder.respond(Self.plain(200, "ok"))
        case .ready:
            checkReadiness { failure in
                responder.respond(failure.map { Self.plain(503, "not ready: \($0)") } ?? Self.plain(200, "ready"))
            }
        case .metrics:
            if !open {
                do {
                    let identity = try identify(request, params: [:], namespace: configuration.defaultNamespace)
                    guard identity.isAdmin else {
                        throw RESTError(401, "Metrics need the admin credential: 'Authorization: Bearer <credential>'.")
                    }
                } catch {
                    responder.respond(.error(error))
                    return
                }
            }
            let text = MetricsExposition.render(self)
            responder.respond(
                HTTPResponse(
                    status: 200, headers: [("Content-Type", OperationsEndpoint.metricsContentType)],
                    body: Array(text.utf8)))
        }
    }

    /// Calls `done` on the loop with nil when ready, else why not.
    func checkReadiness(_ done: @escaping (String?) -> Void) {
        if isDraining { return done("draining") }
        readinessWaiters.append(done)
        guard readinessWaiters.count == 1 else { return }
        readinessProbeID &+= 1
        let id = readinessProbeID
        let path = configuration.dataDirectory + "/" + OperationsEndpoint.probeFileName
        let timeout = OperationsEndpoint.probeTimeoutMs
        readinessTimer = loop.schedule(afterMilliseconds: timeout) { [weak self] in
            self?.finishReadiness(id, "store threads did not answer within \(timeout) ms")
        }
        let back = LoopBound(self, loop: loop)
        let loop = self.loop
        registry.pool.run {
            let failure = Self.probe(path)
            loop.execute { back.value?.finishReadiness(id, failure) }
        }
    }

    /// Answers the requests waiting for probe `id` (a late answer of a probe that timed out is dropped).
    private func finishReadiness(_ id: UInt64, _ failure: String?) {
        guard id == readinessProbeID, !readinessWaiters.isEmpty else { return }
        readinessTimer?.cancel()
        readinessTimer = nil
        let waiters = readinessWaiters
        readinessWaiters = []
        let failure = failure ?? (isDraining ? "draining" : nil)
        for waiter in waiters { waiter(failure) }
    }

    /// Writes a byte to a fresh file in the data directory, syncs and removes it: nil when it worked.
    private static func probe(_ path: String) -> String? {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "data directory not writable (errno \(errno))" }
        defer { unlink(path) }
        var byte: UInt8 = 0x0A
        let written = write(fd, &byte, 1)
        let writeErrno = errno
        let synced = fsync(fd)
        let syncErrno = errno
        close(fd)
        if written != 1 { return "data directory write failed (errno \(writeErrno))" }
        if synced != 0 { return "data directory fsync failed (errno \(syncErrno))" }
        return nil
    }

    private static func plain(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store")],
            body: Array((text + "\n").utf8))
    }
}

/// The handler of `--metrics-port`: the operations endpoints without credentials, nothing else. Loop-confined.
final class OperationsHandler: HTTPHandler {
    let context: ServerContext

    init(context: ServerContext) { self.context = context }

    func handle(_ request: HTTPRequest, _ responder: HTTPResponder) {
        guard let endpoint = OperationsEndpoint(rawValue: request.path) else {
            responder.respond(
                .error(RESTError(404, "This port serves /.canopy/metrics, /.canopy/health, /.canopy/ready.")))
            return
        }
        context.handleOperations(endpoint, request, responder, open: true)
    }
}
