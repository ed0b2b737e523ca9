// WriteError+Wire -- how a refused or failed write is answered in the wire protocol (`{"s": status, "d": text}`).

import CanopyCore

extension WriteError {
    /// The reply's status: `permission_denied` and `datastale` as Firebase sends them, else `failure`.
    var wireStatus: String {
        switch self {
        case .permissionDenied: Wire.Status.permissionDenied
        case .conditionFailed: Wire.Status.dataStale
        case .invalidData, .publish, .storageFailed, .conflict: Wire.Status.failure
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
