// WriteError+Wire -- how a refused or failed write is answered in the wire protocol (`{"s": status, "d": text}`).

extension WriteError {
    /// The reply's status: `permission_denied` and `datastale` as Firebase sends them, else `failure`.
    var wireStatus: String {
        switch self {
        case .permissionDenied: "permission_denied"
        case .conditionFailed: "datastale"
        case .invalidData, .publish, .storageFailed, .conflict: "failure"
        }
    }

    /// The reply's text.
    var wireMessage: String {
        switch self {
        case .conditionFailed: "Transaction hash does not match"
        case .storageFailed: "The write could not be stored."
        default: userMessage
        }
    }
}
