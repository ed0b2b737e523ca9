// LongPollError -- why a `/.lp` request was refused: a bad request, an unknown session or a limit.

import CanopyCore

/// A refused long-poll request. Carries facts (which parameter, which limit), never payload data or passwords.
struct LongPollError: CanopyError, Equatable {
    enum Kind: Equatable {
        /// Malformed parameters or segments (400).
        case badRequest
        /// No live session has this id (404).
        case unknownSession
        /// The id exists but the password does not match; answered exactly like an unknown id (404), so a
        /// guessed id learns nothing.
        case wrongPassword
        /// The server holds as many long-poll sessions as it may (503).
        case tooManySessions
        /// The client's address holds as many long-poll sessions as it may (429).
        case tooManySessionsFromAddress
        /// The server (or the client's address) holds as many pending segments as it may; the session is closed
        /// (503).
        case overloaded
        /// A per-session buffer or count limit was exceeded; the session is closed (413).
        case limitExceeded
    }

    let kind: Kind
    let message: String

    var code: String {
        switch kind {
        case .badRequest: "lp_bad_request"
        case .unknownSession: "lp_unknown_session"
        case .wrongPassword: "lp_wrong_password"
        case .tooManySessions: "lp_too_many_sessions"
        case .tooManySessionsFromAddress: "lp_too_many_sessions_from_address"
        case .overloaded: "lp_overloaded"
        case .limitExceeded: "lp_limit_exceeded"
        }
    }

    var userMessage: String { message }

    /// The HTTP status the error is answered with.
    var status: Int {
        switch kind {
        case .badRequest: 400
        case .unknownSession, .wrongPassword: 404
        case .tooManySessions, .overloaded: 503
        case .tooManySessionsFromAddress: 429
        case .limitExceeded: 413
        }
    }

    static func badRequest(_ message: String) -> LongPollError {
        LongPollError(kind: .badRequest, message: message)
    }
    static func limit(_ message: String) -> LongPollError {
        LongPollError(kind: .limitExceeded, message: message)
    }
    static let unknownSession = LongPollError(
        kind: .unknownSession, message: "Unknown or expired long-poll session.")
    static let wrongPassword = LongPollError(kind: .wrongPassword, message: unknownSession.message)
    static let tooManySessions = LongPollError(
        kind: .tooManySessions, message: "Too many long-poll sessions; try again later.")
    static let tooManySessionsFromAddress = LongPollError(
        kind: .tooManySessionsFromAddress, message: "Too many long-poll sessions from this address.")
    static let overloaded = LongPollError(
        kind: .overloaded, message: "Too many unassembled long-poll segments on this server; try again later.")
}
