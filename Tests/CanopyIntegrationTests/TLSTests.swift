// TLSTests -- `canopy serve --tls-cert/--tls-key` against real clients: curl, HTTPClient, SSE, WebSocket, the
// Swift client over wss; refused certificates; plaintext to a TLS port; SIGHUP reload; bad files at start.
// Every certificate is made at test time by `openssl` in a temporary directory (a throw-away CA).

import CanopyClient
import CanopyCore
import CanopyNet
import Foundation
import Testing

/// A throw-away CA and certificates signed by it (and one by another CA), made with the `openssl` command.
struct TestCertificates {
    let directory: String
    var caFile: String { directory + "/ca.pem" }
    /// The certificate and key the server is started with (copies it may be told to reload).
    var liveCertificate: String { directory + "/live.pem" }
    var liveKey: String { directory + "/live.key" }

    init() throws {
        directory = makeTemporaryDirectory()
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Canopy Test CA"])
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", "other-ca.key", "-out", "other-ca.pem", "-days", "2", "-subj", "/CN=Other CA"])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
            toFile: directory + "/san.cnf", atomically: true, encoding: .utf8)
        try issue("server", serial: "0x1001", ca: "ca")
        try issue("renewed", serial: "0x2002", ca: "ca")
        try issue("expired", serial: "0x3003", ca: "ca", days: "-1")
        try issue("stranger", serial: "0x4004", ca: "other-ca")
        try install("server")
    }

    /// Makes `name.pem` / `name.key`: a P-256 certificate for 127.0.0.1 and localhost.
    private func issue(_ name: String, serial: String, ca: String, days: String = "1") throws {
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(name).key",
                     "-out", "\(name).csr", "-subj", "/CN=localhost"])
        try openssl(["x509", "-req", "-in", "\(name).csr", "-CA", "\(ca).pem", "-CAkey", "\(ca).key",
                     "-set_serial", serial, "-days", days, "-extfile", "san.cnf", "-out", "\(name).pem"])
    }

    /// Copies `name`'s certificate and key over the files the server was started with.
    func install(_ name: String) throws {
        for (source, target) in [("\(name).pem", liveCertificate), ("\(name).key", liveKey)] {
            try? FileManager.default.removeItem(atPath: target)
            try FileManager.default.copyItem(atPath: directory + "/" + source, toPath: target)
        }
    }

    func path(_ file: String) -> String { directory + "/" + file }

    @discardableResult
    func openssl(_ arguments: [String], input: String? = nil) throws -> String {
        try run("/usr/bin/env", ["openssl"] + arguments, in: directory)
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// Runs a program; returns its standard output, or throws with its standard error when it exits nonzero.
@discardableResult
func run(_ program: String, _ arguments: [String], in directory: String? = nil) throws -> String {
    let result = try runStatus(program, arguments, in: directory)
    guard result.status == 0 else {
        throw HTTPClientError("\(arguments.first ?? program) exited \(result.status): \(result.error)")
    }
    return result.output
}

func runStatus(_ program: String, _ arguments: [String], in directory: String? = nil) throws -> (
    status: Int32, output: String, error: String
) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
}

@Suite(.serialized) struct TLSTests {
    /// A `canopy serve` on a TLS port with the throw-away certificates.
    func startServer(_ certificates: TestCertificates, logFile: String? = nil) throws -> ServerProcess {
        try ServerProcess(
            dataDirectory: makeTemporaryDirectory(),
            extraArguments: ["--tls-cert", certificates.liveCertificate, "--tls-key", certificates.liveKey],
            logFile: logFile)
    }

    /// The serial number of the certificate the server presents to a new connection.
    func servedSerial(_ port: Int, _ certificates: TestCertificates) throws -> String {
        let pem = try run("/usr/bin/env", ["openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-CAfile",
                                           certificates.caFile])
        let begin = try #require(pem.range(of: "-----BEGIN CERTIFICATE-----"))
        let end = try #require(pem.range(of: "-----END CERTIFICATE-----"))
        let file = certificates.path("served-\(UUID().uuidString).pem")
        try String(pem[begin.lowerBound..<end.upperBound]).write(toFile: file, atomically: true, encoding: .utf8)
        return try certificates.openssl(["x509", "-in", file, "-noout", "-serial"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func tlsClient(_ server: ServerProcess, _ certificates: TestCertificates, host: String = "127.0.0.1") throws
        -> HTTPClient
    {
        HTTPClient(
            host: host, port: server.port, timeoutSeconds: 10, tls: try TLSClientContext(caFile: certificates.caFile))
    }

    @Test func curlWithTheCAReadsAndWritesOverHTTPS() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try startServer(certificates)
        defer { server.terminate() }
        let url = "https://127.0.0.1:\(server.port)/rooms/r1.json"
        let auth = "Authorization: Bearer \(server.admin)"
        let put = try run("/usr/bin/env", ["curl", "-sS", "--cacert", certificates.caFile, "-X", "PUT", "-H", auth,
                                           "-d", #"{"name":"Lobby"}"#, url])
        #expect(put == #"{"name":"Lobby"}"#)
        let named = try run("/usr/bin/env", ["curl", "-sS", "--cacert", certificates.caFile, "-H", auth,
                                             "https://localhost:\(server.port)/rooms/r1/name.json"])
        #expect(named == #""Lobby""#)
        // Without the CA, or below TLS 1.2, curl refuses (60: certificate; 35: handshake).
        #expect(try runStatus("/usr/bin/env", ["curl", "-sS", url]).status == 60)
        let old = try runStatus("/usr/bin/env", ["curl", "-sS", "--cacert", certificates.caFile, "--tls-max", "1.1",
                                                 url])
        #expect(old.status == 35)
        let tls12 = try run("/usr/bin/env", ["curl", "-sS", "--cacert", certificates.caFile, "--tlsv1.2",
                                             "--tls-max", "1.2", "-H", auth, url])
        #expect(tls12 == #"{"name":"Lobby"}"#)
    }

    @Test func theConsoleIsServedOverTLS() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try startServer(certificates)
        defer { server.terminate() }
        let page = try tlsClient(server, certificates).request("GET", "/.canopy/console/")
        #expect(page.status == 200)
        #expect(page.text.contains("Canopy console"))
        #expect(page.header("Content-Security-Policy")?.contains("script-src 'self'") == true)
    }

    @Test func plaintextToATLSPortGetsA400Quickly() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try startServer(certificates)
        defer { server.terminate() }
        let started = Date()
        let response = try HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 5).request("GET", "/.json")
        #expect(response.status == 400)
        #expect(response.text.contains("This port speaks HTTPS"))
        #expect(Date().timeIntervalSince(started) < 4)
    }

    @Test func eventStreamAndWebSocketListenOverTLS() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try startServer(certificates)
        defer { server.terminate() }
        let stream = try tlsClient(server, certificates, host: "localhost")
        let head = try stream.openStream(
            "/feed.json", headers: [("Accept", "text/event-stream"), ("Authorization", "Bearer \(server.admin)")])
        #expect(head.status == 200)
        var text = String(decoding: try stream.readChunk(), as: UTF8.self)
        while !text.contains("event: put") { text += String(decoding: try stream.readChunk(), as: UTF8.self) }

        let socket = try WireTestClient(
            port: server.port, namespace: "default", tls: try TLSClientContext(caFile: certificates.caFile))
        #expect(socket.waitFor { $0["t"] == "c" } != nil)
        let auth = socket.request("gauth", ["cred": .string(server.admin)])
        #expect(socket.reply(auth)?["d"]?["b"]?["s"] == "ok")
        let listen = socket.request("q", ["p": "/feed", "h": ""])
        #expect(socket.reply(listen)?["d"]?["b"]?["s"] == "ok")

        let writer = try tlsClient(server, certificates)
        let put = try writer.json(
            "PUT", "/feed/a.json", #""hello""#, headers: [("Authorization", "Bearer \(server.admin)")])
        #expect(put.status == 200)
        #expect(socket.waitFor { $0["d"]?["a"] != nil && $0.serialized().contains("hello") } != nil)
        while !text.contains("hello") { text += String(decoding: try stream.readChunk(), as: UTF8.self) }
        socket.close()
    }

    @Test func swiftClientOverWSS() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try startServer(certificates)
        defer { server.terminate() }
        var options = testOptions
        options.tlsCAFile = certificates.caFile
        let database = try Database(
            url: URL(string: "wss://localhost:\(server.port)")!, namespace: "default", token: server.admin,
            options: options)
        try await database.ref("greeting").setValue("hi over TLS").synced()
        #expect(try await database.ref("greeting").getValue(timeout: 10).value == "hi over TLS")
        await database.close()

        // The system store does not trust the throw-away CA: the client never connects and says why.
        let untrusting = try Database(
            url: URL(string: "https://127.0.0.1:\(server.port)")!, namespace: "default", token: server.admin,
            options: testOptions)
        #expect(await eventually(timeout: 10) { untrusting.lastConnectionError != nil })
        #expect(untrusting.lastConnectionError?.contains("certificate") == true)
        #expect(untrusting.connectionState != .connected)
        await untrusting.close()

        var missing = testOptions
        missing.tlsCAFile = certificates.path("absent.pem")
        #expect(throws: ClientError.self) {
            _ = try Database(url: URL(string: "wss://127.0.0.1:1")!, namespace: "x", options: missing)
        }
    }

    @Test(arguments: [("expired", "certificate has expired"), ("stranger", "unable to get local issuer")])
    func clientsRefuseABadCertificate(name: String, reason: String) throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        try certificates.install(name)
        let server = try startServer(certificates)
        defer { server.terminate() }
        #expect {
            _ = try tlsClient(server, certificates).request("GET", "/.json")
        } throws: { error in
            (error as? HTTPClientError)?.message.contains(reason) == true
        }
        #expect {
            _ = try WireTestClient(
                port: server.port, namespace: "default", tls: try TLSClientContext(caFile: certificates.caFile))
        } throws: { error in
            (error as? HTTPClientError)?.message.contains(reason) == true
        }
        let curl = try runStatus("/usr/bin/env", ["curl", "-sS", "--cacert", certificates.caFile,
                                                  "https://127.0.0.1:\(server.port)/.json"])
        #expect(curl.status == 60)
    }

    @Test func sighupReloadsTheCertificateAndKeepsConnections() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let log = certificates.path("serve.log")
        let server = try startServer(certificates, logFile: log)
        defer { server.terminate() }
        #expect(try servedSerial(server.port, certificates) == "serial=1001")
        let socket = try WireTestClient(
            port: server.port, namespace: "default", tls: try TLSClientContext(caFile: certificates.caFile))
        #expect(socket.waitFor { $0["t"] == "c" } != nil)

        try certificates.install("renewed")
        kill(server.process.processIdentifier, SIGHUP)
        var serial = ""
        for _ in 0..<100 where serial != "serial=2002" {
            serial = try servedSerial(server.port, certificates)
            if serial != "serial=2002" { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(serial == "serial=2002")
        // The WebSocket opened with the old certificate is still served.
        let auth = socket.request("gauth", ["cred": .string(server.admin)])
        #expect(socket.reply(auth)?["d"]?["b"]?["s"] == "ok")
        #expect(!socket.isClosed)

        // A broken file is refused: the daemon keeps the renewed certificate and says why in its log.
        try "not a certificate".write(toFile: certificates.liveCertificate, atomically: true, encoding: .utf8)
        kill(server.process.processIdentifier, SIGHUP)
        var logged = ""
        for _ in 0..<100 where !logged.contains("tls.reload_failed") {
            Thread.sleep(forTimeInterval: 0.05)
            logged = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        }
        #expect(logged.contains("tls.reload_failed"))
        #expect(logged.contains(certificates.liveCertificate))
        #expect(try servedSerial(server.port, certificates) == "serial=2002")
        #expect(server.process.isRunning)
    }

    @Test func aMissingOrBrokenCertificateRefusesToStart() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let absent = certificates.path("absent.pem")
        let missing = try runStatus(
            canopyBinaryPath(), ["serve", "--port", "0", "--data", data, "--tls-cert", absent, "--tls-key",
                                 certificates.liveKey])
        #expect(missing.status != 0)
        #expect(missing.error.contains(absent))
        let mismatched = try runStatus(
            canopyBinaryPath(), ["serve", "--port", "0", "--data", data, "--tls-cert", certificates.liveCertificate,
                                 "--tls-key", certificates.path("renewed.key")])
        #expect(mismatched.status != 0)
        #expect(mismatched.error.contains("mismatch"))
        let half = try runStatus(
            canopyBinaryPath(), ["serve", "--port", "0", "--data", data, "--tls-cert", certificates.liveCertificate])
        #expect(half.status == 64)
        #expect(half.error.contains("--tls-key"))
    }
}
