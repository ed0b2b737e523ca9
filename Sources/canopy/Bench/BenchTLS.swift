// BenchTLS -- the benchmarks' TLS options: a throw-away certificate made by `openssl`, or the files given.

import CanopyNet
import Foundation

/// What `--tls`, `--tls-cert`, `--tls-key`, `--tls-ca` ask of a benchmark that starts its own daemon, and the client
/// context that trusts it.
struct BenchTLSOptions {
    var certificateFile: String?
    var keyFile: String?
    var caFile: String?

    /// Consumes one of the TLS options; false when `option` is not one of them.
    mutating func parse(_ option: String, _ arguments: inout Arguments) throws(UsageError) -> Bool {
        switch option {
        case "--tls-cert": certificateFile = try arguments.value(for: option)
        case "--tls-key": keyFile = try arguments.value(for: option)
        case "--tls-ca": caFile = try arguments.value(for: option)
        default: return false
        }
        return true
    }

    /// Both of `--tls-cert`/`--tls-key` or neither; `--tls-ca` is needed with them (a private certificate).
    func validate() throws(UsageError) {
        switch (certificateFile, keyFile) {
        case (nil, nil): break
        case (nil, _): throw .missingOption("--tls-cert")
        case (_, nil): throw .missingOption("--tls-key")
        default: if caFile == nil { throw .missingOption("--tls-ca") }
        }
    }

    var givesFiles: Bool { certificateFile != nil }

    /// The files to serve with: the ones given, or a fresh throw-away CA and a certificate for 127.0.0.1/localhost.
    func materialize() throws -> BenchCertificate {
        if let certificateFile, let keyFile, let caFile {
            return BenchCertificate(certificateFile: certificateFile, keyFile: keyFile, caFile: caFile, directory: nil)
        }
        return try BenchCertificate.throwAway()
    }
}

/// A server certificate, its key and the CA that signed it; a throw-away one is removed by ``remove()``.
struct BenchCertificate {
    let certificateFile: String
    let keyFile: String
    let caFile: String
    /// The temporary directory of a throw-away certificate (nil for files the user gave).
    let directory: String?

    /// A client context trusting ``caFile`` only.
    func clientContext() throws -> TLSClientContext { try Self.trusting(caFile: caFile) }

    /// A client context trusting `caFile`, or the system's CA store when nil.
    static func trusting(caFile: String?) throws -> TLSClientContext {
        do throws(TLSError) {
            guard let caFile else { return try TLSClientContext.system.get() }
            return try TLSClientContext(caFile: caFile)
        } catch {
            throw CommandFailure(error.userMessage)
        }
    }

    func remove() {
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// A P-256 CA and a server certificate for `IP:127.0.0.1, DNS:localhost`, made by the `openssl` command.
    static func throwAway() throws -> BenchCertificate {
        guard let openssl = FanoutChild.findExecutable("openssl") else {
            throw CommandFailure("--tls needs the openssl command to make a throw-away certificate (apt-get install openssl)")
        }
        let directory = NSTemporaryDirectory() + "canopy-bench-tls-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
            toFile: directory + "/san.cnf", atomically: true, encoding: .utf8)
        let steps: [[String]] = [
            ["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Canopy bench CA"],
            ["req"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"],
            [
                "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "0x1001",
                "-days", "1", "-extfile", "san.cnf", "-out", "server.pem",
            ],
        ]
        for step in steps {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: openssl)
            process.arguments = step
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            process.standardOutput = FileHandle.nullDevice
            let error = Pipe()
            process.standardError = error
            try process.run()
            let message = error.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                try? FileManager.default.removeItem(atPath: directory)
                throw CommandFailure(
                    "openssl \(step[0]) failed (exit \(process.terminationStatus)): "
                        + String(decoding: message, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        return BenchCertificate(
            certificateFile: directory + "/server.pem", keyFile: directory + "/server.key", caFile: directory + "/ca.pem",
            directory: directory)
    }
}
