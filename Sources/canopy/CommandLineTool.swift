// CommandLineTool -- dispatches `canopy <command>` to its Command, maps errors to messages and exit codes.

import CanopyCore
import Foundation

enum CommandLineTool {
    static var commands: [any Command.Type] {
        [
            Serve.self, PublishCommand.self, UnpublishCommand.self, RevertCommand.self, RollbackCommand.self,
            StatusCommand.self, PreviewCommand.self, ImportCommand.self, ExportCommand.self, TokenCommand.self,
            RulesCommand.self, BenchCommand.self, WatchCommand.self, ServiceCommand.self, BackupCommand.self,
            RestoreCommand.self,
        ]
    }

    static func printUsage() {
        var text = "canopy -- a self-hosted realtime JSON-tree database that speaks Firebase's protocols.\n\n"
        text += "USAGE: canopy <command> [options]\n\nCOMMANDS:\n"
        for command in commands {
            text += "  " + command.name.padding(toLength: 10, withPad: " ", startingAt: 0) + command.abstract + "\n"
        }
        text += "\nRun 'canopy <command> --help' for a command's options.\n"
        print(text, terminator: "")
    }

    static func runMain(arguments: [String]) -> Int32 {
        var words = arguments
        guard let name = words.first else {
            printUsage()
            return 64
        }
        if name == "--help" || name == "-h" || name == "help" {
            printUsage()
            return 0
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            writeStandardError("canopy: error: unknown command '\(name)'\n")
            printUsage()
            return 64
        }
        words.removeFirst()
        if words.contains("--help") || words.contains("-h") {
            print("USAGE: \(command.usage)")
            return 0
        }
        var arguments = Arguments(words)
        do {
            let instance = try command.init(parsing: &arguments)
            try instance.run()
            return 0
        } catch let error as UsageError {
            writeStandardError("canopy: error: \(error.userMessage)\nUSAGE: \(command.usage)\n")
            return 64
        } catch let error as CommandFailure {
            if !error.message.isEmpty { writeStandardError("canopy: error: \(error.userMessage)\n") }
            return error.exitCode
        } catch let error as any CanopyError {
            writeStandardError("canopy: error: \(error.userMessage)\n")
            return 1
        } catch {
            writeStandardError("canopy: error: \(error)\n")
            return 1
        }
    }
}
