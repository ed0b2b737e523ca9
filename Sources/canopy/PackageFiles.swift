// PackageFiles -- finds files that ship with Canopy (seed/, rules/) from the working directory or the package root.

import Foundation

enum PackageFiles {
    /// `relative` under the working directory if it exists there, else under the package root this binary was
    /// built from.
    static func path(_ relative: String) -> String {
        if FileManager.default.fileExists(atPath: relative) { return relative }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(relative).path
    }
}
