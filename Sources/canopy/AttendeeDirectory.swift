// AttendeeDirectory+Claims -- reading the attendee directory file and the token claims an attendee gets.

import CanopyCore
import CanopyPublish
import CanopyServer

extension AttendeeDirectory {
    /// Reads and parses a directory file, or fails with a clear message.
    static func load(path: String) throws -> AttendeeDirectory {
        let json: JSONValue
        do {
            json = try JSONValue.parse(try readFile(path))
        } catch let error as JSONParseError {
            throw CommandFailure("\(path) is not valid JSON: \(error.userMessage)")
        }
        do {
            return try AttendeeDirectory.parse(json)
        } catch {
            throw CommandFailure("\(path): \(error.userMessage)")
        }
    }

    /// `userId`, `tierId` and `groups` claims for one attendee.
    func claims(for id: String) throws -> [JSONMember] {
        guard let attendee = attendee(id: id) else {
            throw CommandFailure("attendee '\(id)' is not in the directory")
        }
        return [
            JSONMember("userId", .string(attendee.id)),
            JSONMember("tierId", .string(attendee.tierId)),
            JSONMember("groups", .object(attendee.groupIds.map { JSONMember($0, true) })),
        ]
    }
}

/// Reads a whole file as UTF-8 text, or fails with a clear message.
func readFile(_ path: String) throws -> String {
    do {
        return try readTextFile(path)
    } catch {
        throw CommandFailure("cannot read '\(path)'")
    }
}
