// Daemon+TLS -- loading the certificate for `canopy serve --tls-cert/--tls-key`, and reloading it on SIGHUP.

import CanopyCore
import CanopyNet

extension Daemon {
    /// `https` when the daemon serves TLS, else `http` (the scheme of the URL it prints).
    public var scheme: String { configuration.tls == nil ? "http" : "https" }

    /// Loads the certificate chain and key; the error names the file that is missing or does not parse.
    static func loadTLS(_ files: ServerConfiguration.TLSFiles) throws(TLSError) -> TLSServerContext {
        try TLSServerContext(certificateFile: files.certificateFile, keyFile: files.keyFile)
    }

    /// Rebuilds the TLS context from the files for connections accepted from now on; established connections
    /// keep the context they started with. A failed reload keeps the current certificate and logs why.
    static func reloadTLS(_ files: ServerConfiguration.TLSFiles, into server: HTTPServer, logger: Logger) {
        do {
            let context = try loadTLS(files)
            server.tlsContext = context
            logger.notice("tls.reloaded", ["cert": files.certificateFile, "serial": context.certificateSerial])
        } catch {
            logger.error(
                "tls.reload_failed",
                ["error": error.userMessage, "serial": server.tlsContext?.certificateSerial ?? "?"])
        }
    }
}
