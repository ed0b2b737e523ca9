// swift-tools-version:6.2
// Tools version 6.x means Swift 6 language mode: complete concurrency checking everywhere.
import PackageDescription

// InternalImportsByDefault is deliberately not enabled: it would force `public import Foundation`
// in nearly every file for little gain; C types are kept out of public API by review instead.
//
// Release builds drop the dynamic exclusivity check (`-enforce-exclusivity=unchecked`): every read or write of a
// class's stored property otherwise goes through the runtime's access set, which costs the fan-out and write
// paths 15–20% of their instructions (measured with callgrind; Architecture.md#Performance). Debug builds, and so
// the whole test suite, keep the check, and the compiler still proves exclusivity statically in every build.
let settings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

func library(_ name: String, _ deps: [Target.Dependency]) -> Target {
    .target(name: name, dependencies: deps, swiftSettings: settings)
}
func tests(_ name: String, _ deps: [Target.Dependency], resources: [Resource]? = nil) -> Target {
    .testTarget(name: name, dependencies: deps, resources: resources, swiftSettings: settings)
}

let package = Package(
    name: "canopy",
    // Apple minimums of what the client library uses: Synchronization's Mutex/Atomic (ignored on Linux).
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .executable(name: "canopy", targets: ["canopy"]),
        // The client SDK for apps: `.product(name: "CanopyClient", package: "canopy")` (Tests/ClientPackageExample).
        .library(name: "CanopyClient", targets: ["CanopyClient"]),
    ],
    targets: [
        // C shims: Glibc does not export epoll/eventfd/timerfd; SQLite and OpenSSL come from Debian.
        .systemLibrary(name: "CCanopyLinux"),
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCrypto", providers: [.apt(["libssl-dev"])]),

        // OpenSSL only on Linux: Apple platforms hash with CommonCrypto, so the client library needs no OpenSSL.
        library("CanopyCore", [.target(name: "CCrypto", condition: .when(platforms: [.linux]))]),
        library("CanopyNet", ["CanopyCore", "CCanopyLinux", "CCrypto"]),  // TLS: libssl
        library("CanopyStore", ["CanopyCore", "CSQLite"]),
        library("CanopyRules", ["CanopyCore"]),
        library("CanopyAuth", ["CanopyCore", "CCrypto"]),
        library("CanopyNATS", ["CanopyCore", "CCanopyLinux"]),  // the NATS/JetStream client (cluster mode)
        library("CanopyPublish", ["CanopyCore"]),  // pure: also used by the client's attendee feed
        .target(
            name: "CanopyServer",
            dependencies: [
                "CanopyCore", "CanopyNet", "CanopyStore", "CanopyRules", "CanopyAuth", "CanopyPublish", "CanopyNATS",
                "CCanopyLinux",
            ],
            // The console's files are compiled in as byte arrays (`PackageResources`, see ConsoleAssets).
            resources: [.embedInCode("Console/Assets")],
            swiftSettings: settings
        ),
        .target(
            name: "CanopyClient",
            dependencies: [
                "CanopyCore", "CanopyPublish", "CSQLite",
                .target(name: "CanopyNet", condition: .when(platforms: [.linux])),
            ],
            swiftSettings: settings
        ),
        .executableTarget(
            name: "canopy",
            dependencies: [
                "CanopyCore", "CanopyServer", "CanopyAuth", "CanopyRules", "CanopyStore", "CanopyNet", "CanopyPublish",
                "CanopyNATS", "CanopyClient",
            ],
            swiftSettings: settings
        ),

        // Test support shared by the client and integration tests (not part of any product).
        .target(
            name: "CanopyTestSupport", dependencies: ["CanopyClient", "CanopyNet"], path: "Tests/CanopyTestSupport",
            swiftSettings: settings),

        tests("CanopyCoreTests", ["CanopyCore"]),
        tests("CanopyNetTests", ["CanopyNet", "CanopyCore"]),
        tests("CanopyStoreTests", ["CanopyStore", "CanopyTestSupport"]),
        tests("CanopyRulesTests", ["CanopyRules"], resources: [.copy("Resources")]),
        tests("CanopyAuthTests", ["CanopyAuth"]),
        tests("CanopyPublishTests", ["CanopyPublish"]),
        tests("CanopyNATSTests", ["CanopyNATS", "CanopyCore", "CanopyTestSupport"]),
        tests("CanopyClientTests", ["CanopyClient", "CanopyCore", "CanopyPublish", "CSQLite", "CanopyTestSupport"]),
        tests(
            "CanopyIntegrationTests",
            [
                "CanopyServer", "CanopyCore", "CanopyNet", "CanopyAuth", "CanopyPublish", "CanopyClient",
                "CanopyStore", "CanopyNATS", "CanopyTestSupport",
            ]
        ),
    ]
)

// libFuzzer targets (Tests/Fuzz/<Name>, built and run by Tests/fuzz.sh). They exist only in a manifest evaluated
// with CANOPY_FUZZ set, so a plain `swift build` / `swift test` never sees them: they link only against
// libFuzzer (`-sanitize=fuzzer`), whose driver calls their `LLVMFuzzerTestOneInput`.
if Context.environment["CANOPY_FUZZ"] != nil {
    let fuzzTargets: [(String, [Target.Dependency])] = [
        ("JSON", ["CanopyCore"]),
        ("HTTP", ["CanopyNet", "CanopyCore"]),
        ("WebSocket", ["CanopyNet"]),
        ("Wire", ["CanopyServer", "CanopyCore"]),
        ("Rules", ["CanopyRules", "CanopyCore"]),
        ("JWT", ["CanopyAuth", "CanopyCore"]),
        ("REST", ["CanopyServer", "CanopyNet", "CanopyCore"]),
        ("Export", ["CanopyServer", "CanopyCore"]),
        ("NATS", ["CanopyNATS", "CanopyCore"]),
    ]
    package.targets.append(.target(name: "FuzzSupport", dependencies: ["CanopyCore"], path: "Tests/Fuzz/Support", swiftSettings: settings))
    for (name, dependencies) in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: "Fuzz\(name)", dependencies: dependencies + ["FuzzSupport"], path: "Tests/Fuzz/\(name)",
                swiftSettings: settings))
    }
}
