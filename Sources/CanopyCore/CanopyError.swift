// CanopyError -- the protocol every Canopy error type conforms to.

/// An error that can be shown to a user and mapped to a protocol status at the edge.
///
/// `code` is a stable machine identifier (`invalid_path`, `permission_denied`, ...); `userMessage`
/// is one sentence for people. Errors carry facts (a path, a `line:column`, an errno) but never
/// stored values, tokens or secrets.
public protocol CanopyError: Error, CustomStringConvertible, Sendable {
    var code: String { get }
    var userMessage: String { get }
}

extension CanopyError {
    public var description: String { "\(code): \(userMessage)" }
}
