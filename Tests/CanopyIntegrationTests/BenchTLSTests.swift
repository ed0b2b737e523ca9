// BenchTLSTests -- `canopy bench fanout|write` over TLS on a tiny scale: the TLS path runs, reports its ratios, and
// really speaks TLS (a daemon that only speaks TLS is reached; a client trusting another CA is refused).
// Figures are never asserted here: they belong in the benchmark's own output and in reports.

import Foundation
import Testing

@Suite(.serialized) struct BenchTLSTests {
    @Test(.timeLimit(.minutes(2))) func fanoutComparesTLSWithPlaintextInOneRun() throws {
        let r = try runCanopy([
            "bench", "fanout", "--compare-tls", "--subscribers", "4", "--writes", "20", "--rounds", "1", "--scenario",
            "ab",
        ])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        for row in ["A canopy tls", "A canopy plain", "B canopy tls", "B canopy plain"] {
            #expect(r.stdout.contains(row), "missing row \(row): \(r.stdout)")
        }
        #expect(r.stdout.contains("ratio A tls/plaintext: throughput"), "\(r.stdout)")
        #expect(r.stdout.contains("ratio B tls/plaintext: throughput"), "\(r.stdout)")
        #expect(r.stdout.contains("server CPU per event"), "\(r.stdout)")
        #expect(r.stdout.contains("cli core"))
        #expect(!r.stdout.contains("redis"), "--compare-tls pairs Canopy with Canopy, not Redis")
    }

    @Test(.timeLimit(.minutes(2))) func fanoutOverTLSUsesTheGivenCertificateAndRefusesAnUntrustedOne() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let base = [
            "bench", "fanout", "--subscribers", "3", "--writes", "10", "--rounds", "1", "--scenario", "a",
            "--no-redis", "--tls-cert", certificates.liveCertificate, "--tls-key", certificates.liveKey,
        ]
        let trusted = try runCanopy(base + ["--tls-ca", certificates.caFile])
        #expect(trusted.status == 0, "\(trusted.stdout)\n\(trusted.stderr)")
        #expect(trusted.stdout.contains("A canopy over tls, all on /room"), "\(trusted.stdout)")
        let untrusted = try runCanopy(base + ["--tls-ca", certificates.path("other-ca.pem")])
        #expect(untrusted.status != 0)
        #expect(untrusted.stdout.contains("certificate"), "\(untrusted.stdout)")
    }

    @Test(.timeLimit(.minutes(2))) func fanoutReachesAnExternalTLSDaemonByItsHTTPSURL() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try ServerProcess(
            dataDirectory: makeTemporaryDirectory(),
            extraArguments: ["--tls-cert", certificates.liveCertificate, "--tls-key", certificates.liveKey])
        defer { server.terminate() }
        let url = "https://127.0.0.1:\(server.port)"
        let r = try runCanopy([
            "bench", "fanout", "--url", url, "--token", server.admin, "--tls-ca", certificates.caFile,
            "--subscribers", "3", "--writes", "10", "--rounds", "1", "--scenario", "b", "--no-redis",
        ])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stdout.contains("B canopy over tls, own /users/<i> each"), "\(r.stdout)")
        // The same daemon by http:// is plaintext to a TLS port: refused, so the run above did speak TLS.
        let plain = try runCanopy([
            "bench", "fanout", "--url", "http://127.0.0.1:\(server.port)", "--token", server.admin,
            "--subscribers", "1", "--writes", "1", "--rounds", "1", "--scenario", "a", "--no-redis",
        ])
        #expect(plain.status != 0)
    }

    @Test(.timeLimit(.minutes(2))) func writeComparesTLSWithPlaintextAtEachConnectionCount() throws {
        let r = try runCanopy(["bench", "write", "--compare-tls", "--writes", "100", "--clients", "4", "--rounds", "1"])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        for count in [1, 4, 50] {
            #expect(r.stdout.contains("ratio tls/plaintext, \(count) conn: writes/s"), "\(r.stdout)")
            #expect(r.stdout.contains("canopy put, tls, \(count) conn"), "\(r.stdout)")
        }
        #expect(r.stdout.contains("server CPU per write"), "\(r.stdout)")
    }

    @Test(arguments: [
        ["bench", "fanout", "--compare-tls", "--url", "https://127.0.0.1:1", "--token", "t"],
        ["bench", "fanout", "--tls-cert", "a.pem"],
        ["bench", "fanout", "--tls-cert", "a.pem", "--tls-key", "a.key"],
        ["bench", "fanout", "--url", "https://127.0.0.1:1", "--token", "t", "--tls-cert", "a", "--tls-key", "b"],
        ["bench", "write", "--tls", "--compare-tls"],
        ["bench", "write", "--tls-key", "a.key"],
    ]) func contradictoryOrIncompleteTLSOptionsAreUsageErrors(arguments: [String]) throws {
        let r = try runCanopy(arguments)
        #expect(r.status == 64, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stderr.contains("--tls") || r.stderr.contains("--url"), "\(r.stderr)")
    }
}
