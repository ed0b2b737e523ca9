// WatchTestSupport -- `canopy watch` as a child process: its output split into blocks, and the feed in each.

import Foundation
import Synchronization

/// A running `canopy watch` whose standard output is collected (it is not a terminal: one block per change).
final class WatchProcess: Sendable {
    private let process: Process  // started in init, then only signalled and awaited
    private let output = OutputBuffer()

    init(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: canopyBinaryPath())
        process.arguments = ["watch"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        pipe.fileHandleForReading.readabilityHandler = { [output] handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                return
            }
            output.append(String(decoding: data, as: UTF8.self))
        }
        try process.run()
        self.process = process
    }

    /// Every complete block printed so far.
    var blocks: [String] {
        let text = output.text
        var parts = text.components(separatedBy: "\n---\n")
        parts.removeLast()  // the block being written (or the empty tail)
        return parts
    }

    /// The feed keys of each block that shows a feed.
    var feeds: [[String]] { blocks.compactMap(Self.feedKeys) }

    /// The distinct feeds in the order they were shown (a redraw for a connection change repeats the feed).
    var feedChanges: [[String]] {
        var changes: [[String]] = []
        for feed in feeds where changes.last != feed { changes.append(feed) }
        return changes
    }

    /// The keys of a block's item lines (`3. <key>  [type] title`), or nil when the block shows no feed yet.
    static func feedKeys(_ block: String) -> [String]? {
        let lines = block.split(separator: "\n").dropFirst()
        guard lines.last?.hasPrefix("(") == true, lines.last?.contains("item") == true else { return nil }
        return lines.compactMap { line in
            guard let dot = line.firstIndex(of: "."), Int(line[..<dot]) != nil else { return nil }
            return line[line.index(dot, offsetBy: 2)...].split(separator: " ").first.map(String.init)
        }
    }

    /// Sends SIGTERM and returns the exit status.
    func terminate() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}

/// Text collected from a pipe on Foundation's reading thread.
final class OutputBuffer: Sendable {
    private let collected = Mutex<String>("")
    func append(_ text: String) { collected.withLock { $0 += text } }
    var text: String { collected.withLock { $0 } }
}
