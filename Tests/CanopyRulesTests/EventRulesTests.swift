// EventRulesTests -- the access matrix of rules/personalized-content.rules.json, cell by cell.
import CanopyCore
import Testing

@testable import CanopyRules

@Suite struct EventRulesTests {
    static let rules: CompiledRules = {
        do {
            return try CompiledRules.compile(source: SpecResources.repositoryFile("rules/personalized-content.rules.json"))
        } catch {
            fatalError("event rules do not compile: \(error)")
        }
    }()

    static let item: JSONValue = ["order": 1, "type": "text", "title": "Hi"]
    static let data = JSONRuleData([
        "public": ["admin": ["content": ["k1": item]]],
        "private": [
            "admin": [
                "content": ["k1": item], "pendingContent": ["k1": item], "lastPublishedAt": 1_700_000_000_000,
            ],
            "adminable": [
                "users": ["901": ["content": ["k2": item]], "1027": ["content": ["k3": item]]],
                "tiers": ["55": ["content": ["k4": item]], "78": ["content": ["k5": item]]],
                "groups": ["42": ["content": ["k6": item]], "7": ["content": ["k7": item]]],
            ],
        ],
    ])

    /// Auth objects as the token layer produces them (`auth.token` holds every claim).
    static let people: [String: JSONValue] = [
        "901": ["uid": "901", "token": ["userId": "901", "tierId": "55", "groups": ["42": true], "ns": "summit-2026"]],
        "1027": ["uid": "1027", "token": ["userId": "1027", "tierId": "78", "groups": [:], "ns": "summit-2026"]],
        "admin": ["uid": "organiser", "token": ["admin": true, "ns": "summit-2026"]],
        "fake-admin": ["uid": "x", "token": ["admin": "true", "userId": "x"]],
        "numeric-tier": ["uid": "5", "token": ["userId": "5", "tierId": 55]],
        "signed-out": .null,
    ]

    static let reads: [(who: String, path: String, allowed: Bool)] = [
        ("901", "/public/admin", true), ("901", "/public/admin/content", true), ("1027", "/public/admin/content/k1", true),
        ("admin", "/public/admin", true), ("signed-out", "/public/admin", false), ("signed-out", "/public", false),
        ("901", "/public", false),
        ("901", "/private/admin", false), ("901", "/private/admin/content", false),
        ("901", "/private/admin/pendingContent", false), ("901", "/private/admin/lastPublishedAt", false),
        ("admin", "/private/admin/pendingContent", true), ("admin", "/private/admin/lastPublishedAt", true),
        ("901", "/private/adminable/users/901", true), ("901", "/private/adminable/users/901/content/k2", true),
        ("901", "/private/adminable/users/1027", false), ("1027", "/private/adminable/users/1027", true),
        ("1027", "/private/adminable/users/901", false), ("signed-out", "/private/adminable/users/901", false),
        ("admin", "/private/adminable/users/1027", true),
        ("901", "/private/adminable/tiers/55", true), ("901", "/private/adminable/tiers/78", false),
        ("1027", "/private/adminable/tiers/78", true), ("numeric-tier", "/private/adminable/tiers/55", false),
        ("901", "/private/adminable/groups/42", true), ("901", "/private/adminable/groups/7", false),
        ("1027", "/private/adminable/groups/42", false), ("admin", "/private/adminable/groups/7", true),
        ("901", "/private/adminable/users", false), ("901", "/private/adminable", false), ("901", "/private", false),
        ("901", "/", false), ("admin", "/", true), ("fake-admin", "/", false), ("901", "/elsewhere", false),
    ]

    @Test(arguments: reads)
    func read(who: String, path: String, allowed: Bool) throws {
        let auth = try #require(Self.people[who])
        let decision = Self.rules.canRead(
            path: path.split(separator: "/").map(String.init), root: Self.data, auth: auth, now: 0, query: nil)
        #expect(decision.allowed == allowed, "\(who) reading \(path): \(decision.reason)")
    }

    static let writes: [(who: String, path: String, value: JSONValue, allowed: Bool)] = [
        ("901", "/private/adminable/users/901/content/k9", item, false),
        ("901", "/public/admin/content/k9", item, false),
        ("901", "/private/admin/pendingContent/k9", item, false),
        ("signed-out", "/public/admin/content/k9", item, false),
        ("fake-admin", "/private/admin/pendingContent/k9", item, false),
        ("admin", "/private/adminable/users/901/content/k9", item, true),
        ("admin", "/public/admin/content/k9", item, true),
        ("admin", "/private/admin/pendingContent/k9", item, true),
        ("admin", "/private/admin/pendingContent/k9", ["order": "first", "type": "text"], false),
        ("admin", "/private/admin/pendingContent/k9", "just a string", false),
        ("admin", "/private/admin/pendingContent", ["a": item, "b": ["order": "x"]], false),
        ("admin", "/private/admin/pendingContent", ["a": item, "b": item], true),
        ("admin", "/private/admin/pendingContent/k1", nil, true),
        ("admin", "/private/admin/lastPublishedAt", [".sv": "timestamp"], true),
        ("admin", "/private/admin/lastPublishedAt", "yesterday", false),
    ]

    @Test(arguments: writes)
    func write(who: String, path: String, value: JSONValue, allowed: Bool) throws {
        let auth = try #require(Self.people[who])
        let rules = SpecResources.repositoryFile("rules/personalized-content.rules.json")
        let (output, status) = RulesCommandLine.check(
            rulesSource: rules, data: Self.exported, auth: auth, op: "write", path: path, value: value, query: nil,
            now: 1_800_000_000_000)
        #expect(status == 0)
        let result = try JSONValue.parse(output)
        #expect(result["allowed"]?.boolValue == allowed, "\(who) writing \(path): \(output)")
    }

    static let exported: JSONValue = [
        "private": ["admin": ["pendingContent": ["k1": item], "lastPublishedAt": 1]],
        "public": ["admin": ["content": ["k1": item]]],
    ]

    @Test func contentLocationsAreIndexedByOrder() {
        for path in [
            "public/admin/content", "private/admin/content", "private/admin/pendingContent",
            "private/adminable/users/901/content", "private/adminable/tiers/default/content",
            "private/adminable/groups/42/content",
        ] {
            #expect(Self.rules.indexOn(at: path.split(separator: "/").map(String.init)) == ["order"], "\(path)")
        }
    }

    @Test func attendeeQueryOnTheirFeedIsAllowed() throws {
        let auth = try #require(Self.people["901"])
        let query = RuleQuery(orderByChild: "order", limitToFirst: 50)
        let decision = Self.rules.canRead(
            path: ["private", "adminable", "users", "901", "content"], root: Self.data, auth: auth, now: 0,
            query: query)
        #expect(decision.allowed)
    }

    @Test func defaultRulesDenyEverything() throws {
        let rules = try CompiledRules.compile(source: SpecResources.repositoryFile("rules/default.rules.json"))
        let admin = try #require(Self.people["admin"])
        #expect(!rules.canRead(path: [], root: Self.data, auth: admin, now: 0, query: nil).allowed)
        #expect(
            !rules.canWrite(path: ["a"], oldRoot: Self.data, newRoot: Self.data, auth: admin, now: 0).allowed)
    }
}
