// AttendeeDirectory -- an event's attendee list (seed/attendees.json) and the token claims it implies.

import CanopyCore

/// The attendees of one event, as in `seed/attendees.json`.
struct AttendeeDirectory {
    struct Attendee {
        var id: String
        var tierId: String
        var groupIds: [String]
    }
    var eventId: String?
    var attendees: [Attendee]

    static func load(path: String) throws -> AttendeeDirectory {
        let text = try readFile(path)
        let json: JSONValue
        do {
            json = try JSONValue.parse(text)
        } catch {
            throw CommandFailure("\(path) is not valid JSON: \(error.userMessage)")
        }
        guard let list = json["attendees"]?.arrayValue else {
            throw CommandFailure("\(path) has no \"attendees\" array")
        }
        var attendees: [Attendee] = []
        for entry in list {
            guard let id = idString(entry["id"]) else { throw CommandFailure("\(path): an attendee has no id") }
            let tier = idString(entry["tierId"]) ?? "default"
            let groups = (entry["groupIds"]?.arrayValue ?? []).compactMap(idString)
            attendees.append(Attendee(id: id, tierId: tier, groupIds: groups))
        }
        return AttendeeDirectory(eventId: json["eventId"]?.stringValue, attendees: attendees)
    }

    /// `userId`, `tierId` and `groups` claims for one attendee.
    func claims(for id: String) throws -> [JSONMember] {
        guard let attendee = attendees.first(where: { $0.id == id }) else {
            throw CommandFailure("attendee '\(id)' is not in the directory")
        }
        return [
            JSONMember("userId", .string(attendee.id)),
            JSONMember("tierId", .string(attendee.tierId)),
            JSONMember("groups", .object(attendee.groupIds.map { JSONMember($0, true) })),
        ]
    }

    /// Ids are strings or numbers in the directory; claims and paths use their string form.
    static func idString(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let s)?: return s
        case .int(let i)?: return String(i)
        case .double(let d)? where d == d.rounded(): return String(Int64(d))
        default: return nil
        }
    }
}

/// Reads a whole file as UTF-8 text, or fails with a clear message.
func readFile(_ path: String) throws -> String {
    guard let file = fopen(path, "rb") else { throw CommandFailure("cannot read '\(path)'") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&buffer, 1, buffer.count, file)
        if n <= 0 { break }
        bytes += buffer[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

#if canImport(Glibc)
    import Glibc
#endif
