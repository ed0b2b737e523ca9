import CanopyNet
import Foundation
import Testing

/// The ports handed to child processes (NATS servers, cluster nodes) that bind them later.
@Suite struct FreePortTests {
    @Test func portsDrawnTogetherAreDistinctFreeAndBelowTheEphemeralRange() throws {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let ephemeralStart = text.split(whereSeparator: { $0 == "\t" || $0 == " " }).first.flatMap { Int($0) } ?? 32_768
        // 200 draws from 12,000 ports repeat one with a probability near 80 % when drawn one by one.
        let ports = try Socket.freeLoopbackPortsBelowEphemeralRange(count: 200)
        #expect(ports.count == 200)
        #expect(Set(ports).count == 200)
        #expect(ports.allSatisfy { $0 >= 1_024 && $0 < ephemeralStart })
        // Each is free once returned: the holding sockets are closed.
        for port in ports.prefix(20) {
            let listener = try Socket.listen(host: "127.0.0.1", port: port, backlog: 1)
            Socket.close(listener.fd)
        }
    }
}
