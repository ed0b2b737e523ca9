// Token -- `canopy token mint`: sign a token with the daemon's secret; `canopy token secret`: print the database
// secret that signs Firebase legacy tokens.

import CanopyAuth
import CanopyCore
import CanopyPublish
import CanopyServer
import CanopyStore

struct TokenCommand: Command {
    static let name = "token"
    static let abstract = "Mint signed tokens (canopy token mint) or print the legacy database secret."
    static let usage = """
        canopy token secret [--data <dir>]
          prints the database secret for clients that sign Firebase legacy tokens themselves (such as
          FirebaseAuthentication in PyPI's firebase 4.0.1): keep it as secret as the admin credential
        canopy token mint [--claims <json>] [--uid <id>] [--admin [--all-events]] [--attendee <id> --directory <file>]
                          [--ns <namespace>] [--ttl <duration>] [--data <dir>]
          --claims     JSON object of claims (userId, tierId, groups, ns, admin, ...)
          --uid        the token's uid (defaults to userId, or 'admin' with --admin)
          --admin      an admin token: claim admin = true; needs --ns (one event) or --all-events
          --all-events with --admin: an admin token valid on every event of this daemon
          --attendee   fill userId, tierId and groups from the attendee directory (--directory)
          --ns         limit the token to this namespace (claim ns)
          --ttl        lifetime: 30m, 8h, 2d, or seconds (default 1h); expiry no later than year 9999
          --data       the daemon's data directory holding signing.key (default ./canopy-data)
        Claim names used by the event rules: userId (string), tierId (string, "default" when none),
        groups (object: group id -> true), ns (string or list), admin (true).
        """

    var claims: [JSONMember] = []
    var uid: String?
    var admin = false
    var allEvents = false
    var attendee: String?
    var directory: String?
    var namespace: String?
    var ttlSeconds: Int64 = 3600
    var dataDirectory = "./canopy-data"
    /// `canopy token secret` rather than `mint`.
    var printsSecret = false

    init(parsing arguments: inout Arguments) throws(UsageError) {
        switch arguments.nextPositional() {
        case "mint": break
        case "secret":
            printsSecret = true
            while let option = try arguments.nextOption() {
                guard option == "--data" else { throw .unknownOption(option, command: Self.name) }
                dataDirectory = try arguments.value(for: option)
            }
            return
        default:
            throw UsageError(message: "expected 'canopy token mint' or 'canopy token secret'")
        }
        while let option = try arguments.nextOption() {
            switch option {
            case "--claims":
                let text = try arguments.value(for: option)
                guard case .object(let members)? = try? JSONValue.parse(text) else {
                    throw .invalidValue(option, text, expected: "a JSON object")
                }
                claims = members
            case "--uid": uid = try arguments.value(for: option)
            case "--admin": admin = true
            case "--all-events": allEvents = true
            case "--attendee": attendee = try arguments.value(for: option)
            case "--directory": directory = try arguments.value(for: option)
            case "--ns": namespace = try arguments.value(for: option)
            case "--ttl":
                let text = try arguments.value(for: option)
                guard let seconds = parseDuration(text), seconds > 0 else {
                    throw .invalidValue(option, text, expected: "a duration such as 30m, 8h or 2d")
                }
                ttlSeconds = seconds
            case "--data": dataDirectory = try arguments.value(for: option)
            default: throw .unknownOption(option, command: Self.name)
            }
        }
        if attendee != nil && directory == nil { throw .missingOption("--directory") }
        // An admin token without `ns` is an administrator of every event: never by omission.
        let claimsAdmin = claims.contains { $0.key == "admin" && $0.value == true }
        let claimsNamespace = claims.contains { $0.key == "ns" }
        if (admin || claimsAdmin) && namespace == nil && !claimsNamespace && !allEvents {
            throw UsageError(
                message: "an admin token needs --ns <event>, or --all-events for an administrator of every event")
        }
        if allEvents && (namespace != nil || claimsNamespace) {
            throw UsageError(message: "--all-events and --ns (or an ns claim) contradict each other")
        }
    }

    func run() throws {
        if printsSecret {
            _ = try DataDirectory(path: dataDirectory)
            let secret = try SecretFile.loadOrCreate(path: dataDirectory + "/signing.key", byteCount: 32)
            print(Base64.encode(secret, url: true, padding: false))
            return
        }
        // The lifetime first: a refused one must not leave a new data directory behind.
        let now = SystemClock().nowMilliseconds() / 1000
        _ = try TokenMinter.expiry(issuedAt: now, ttlSeconds: ttlSeconds)
        var members = claims
        func set(_ key: String, _ value: JSONValue) {
            members.removeAll { $0.key == key }
            members.append(JSONMember(key, value))
        }
        if let attendee, let directory {
            let loaded = try AttendeeDirectory.load(path: directory)
            for member in try loaded.claims(for: attendee) { set(member.key, member.value) }
            // An attendee token is for their event only, unless --ns says otherwise.
            if namespace == nil, let event = loaded.eventId { set("ns", .string(event)) }
        }
        if admin { set("admin", true) }
        if let namespace { set("ns", .string(namespace)) }
        let claimsObject = JSONValue.object(members)
        let subject = uid ?? claimsObject["userId"]?.stringValue ?? (admin ? "admin" : nil)
        if let subject { set("uid", .string(subject)) }
        _ = try DataDirectory(path: dataDirectory)
        let secret = try SecretFile.loadOrCreate(path: dataDirectory + "/signing.key", byteCount: 32)
        let token = try TokenMinter.mintHS256(
            claims: .object(members), secret: secret, issuedAt: now, ttlSeconds: ttlSeconds)
        print(token)
    }
}
