import CanopyCore

// NetError -- failures of socket and event-loop system calls, carrying the syscall and errno.
#if canImport(Glibc)
    import Glibc
#endif

/// A failed system call or an unusable address in the networking layer.
///
/// Carries the name of the syscall and its `errno` (like NIO's `IOError`), never any payload.
public enum NetError: CanopyError, Equatable {
    /// A system call failed with the given `errno`.
    case system(syscall: String, errno: Int32)
    /// The host string is not an IPv4/IPv6 literal or `localhost`.
    case invalidAddress(host: String)
    /// The port is outside 0...65535.
    case invalidPort(Int)

    public var code: String {
        switch self {
        case .system: "io_error"
        case .invalidAddress: "invalid_address"
        case .invalidPort: "invalid_port"
        }
    }

    public var userMessage: String {
        switch self {
        case .system(let syscall, let errno):
            "\(syscall) failed: \(String(cString: strerror(errno))) (errno \(errno))."
        case .invalidAddress(let host):
            "'\(host)' is not an IP address literal or 'localhost'."
        case .invalidPort(let port):
            "Port \(port) is outside 0...65535."
        }
    }
}
