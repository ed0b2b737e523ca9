// swift-tools-version:6.2
// ClientPackageExample -- a separate package that uses CanopyClient by product name, the way an app does.
//
// `Tests/run.sh` builds it and runs it against a real `canopy serve` on a loopback port. It depends on the
// repository root by path; the dependency is named so the product resolves whatever the checkout directory is
// called.
import PackageDescription

let package = Package(
    name: "ClientPackageExample",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(name: "canopy", path: "../..")],
    targets: [
        .executableTarget(
            name: "ClientPackageExample",
            dependencies: [.product(name: "CanopyClient", package: "canopy")]
        )
    ]
)
