// AttendeeDirectoryTests -- reading the attendee directory and refusing malformed ones.

import CanopyCore
import CanopyPublish
import Testing

@Suite struct AttendeeDirectoryTests {
    @Test func seedDirectoryParses() throws {
        let directory = try Seed.directory()
        #expect(directory.eventId == "canopy-demo-summit")
        #expect(directory.attendees.count == 12)
        let ada = try #require(directory.attendee(id: "100201"))
        #expect(ada == Attendee(id: "100201", tierId: "101", groupIds: ["11"]))
        #expect(directory.attendee(id: "100202")?.tierId == "default")
        #expect(directory.attendee(id: "100203")?.groupIds == ["12", "13"])
        #expect(directory.attendee(id: "nobody") == nil)
    }

    @Test func bareArraysNumbersAndMissingFieldsAreAccepted() throws {
        let directory = try AttendeeDirectory.parse([["id": 7], ["id": "8", "tierId": nil, "groupIds": [1, "2"]]])
        #expect(directory.eventId == nil)
        #expect(directory.attendees == [Attendee(id: "7"), Attendee(id: "8", groupIds: ["1", "2"])])
    }

    @Test(
        arguments: [
            (JSONValue.string("x"), nil),
            (["tiers": []], "attendees"),
            (["attendees": [1]], "attendees/0"),
            (["attendees": [["name": "no id"]]], "attendees/0/id"),
            (["attendees": [["id": "a/b"]]], "attendees/0/id"),
            (["attendees": [["id": "1", "tierId": true]]], "attendees/0/tierId"),
            (["attendees": [["id": "1", "groupIds": [[1]]]]], "attendees/0/groupIds"),
            (["attendees": [["id": "1"], ["id": 1]]], "attendees/1/id"),
        ] as [(JSONValue, String?)])
    func malformedDirectoriesNameTheMember(json: JSONValue, field: String?) {
        #expect(throws: PublishError(.invalidDirectory, field: field)) { try AttendeeDirectory.parse(json) }
    }

    @Test func emptyTierMeansDefault() {
        #expect(Attendee(id: "1", tierId: "").tierId == Attendee.defaultTier)
    }
}

@Suite struct AttendeeClaimsTests {
    @Test func claimsRoundTrip() throws {
        let attendee = Attendee(id: "100203", tierId: "default", groupIds: ["12", "13"])
        let claims = attendee.claims(namespace: "canopy-demo-summit")
        #expect(claims["userId"] == .string("100203"))
        #expect(claims["tierId"] == .string("default"))
        #expect(claims["groups"] == ["12": true, "13": true])
        #expect(claims["ns"] == .string("canopy-demo-summit"))
        #expect(Attendee(claims: claims) == attendee)
        #expect(attendee.claims(namespace: nil)["ns"] == nil)
    }

    @Test func looseClaimShapesAreRead() {
        #expect(
            Attendee(claims: ["userId": 7, "tierId": 101, "groups": [11]])
                == Attendee(id: "7", tierId: "101", groupIds: ["11"]))
        #expect(Attendee(claims: ["userId": "7", "groups": ["11": false, "12": true]])?.groupIds == ["12"])
        #expect(Attendee(claims: ["userId": "7", "tierId": true])?.tierId == "default")
        #expect(Attendee(claims: ["admin": true]) == nil)
        #expect(Attendee(claims: ["userId": "a/b"]) == nil)
    }
}
