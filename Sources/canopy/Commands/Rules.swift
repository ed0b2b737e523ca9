// Rules -- `canopy rules eval|check|lint`: the stable command-line contract for rule checks.

import CanopyCore
import CanopyRules

struct RulesCommand: Command {
    static let name = "rules"
    static let abstract = "Evaluate, check and lint security rules (eval, check, lint)."
    static let usage = """
        canopy rules eval --expr <expr> [--auth <json>] [--data <json>] [--vars <json>] [--query <json>] [--now <ms>]
        canopy rules check --rules <file> --data <file> --auth <json> --op read|write|update --path <p>
                           [--value <json>] [--query <json>] [--now <ms>]
        canopy rules lint <file>
        """

    enum Mode {
        case eval(expr: String, auth: JSONValue, data: JSONValue, vars: [String: String], query: JSONValue?, now: Int64?)
        case check(
            rules: String, data: String, auth: JSONValue, op: String, path: String, value: JSONValue?,
            query: JSONValue?, now: Int64?)
        case lint(file: String)
    }
    var mode: Mode

    init(parsing arguments: inout Arguments) throws(UsageError) {
        guard let verb = arguments.nextPositional() else { throw UsageError(message: "expected eval, check or lint") }
        var options: [String: String] = [:]
        var file: String?
        if verb == "lint" {
            file = arguments.nextPositional()
            guard file != nil else { throw UsageError(message: "canopy rules lint needs a file") }
        }
        let known: Set<String> = [
            "--expr", "--auth", "--data", "--vars", "--query", "--now", "--rules", "--op", "--path", "--value",
        ]
        while let option = try arguments.nextOption() {
            guard known.contains(option) else { throw .unknownOption(option, command: "rules \(verb)") }
            options[option] = try arguments.value(for: option)
        }
        func json(_ name: String) throws(UsageError) -> JSONValue? {
            guard let text = options[name] else { return nil }
            do {
                return try JSONValue.parse(text)
            } catch {
                throw .invalidValue(name, text, expected: "JSON (\(error.userMessage))")
            }
        }
        var now: Int64?
        if let text = options["--now"] {
            guard let ms = Int64(text) else { throw .invalidValue("--now", text, expected: "milliseconds") }
            now = ms
        }
        switch verb {
        case "eval":
            guard let expr = options["--expr"] else { throw .missingOption("--expr") }
            var vars: [String: String] = [:]
            if let v = try json("--vars") {
                guard case .object(let members) = v else {
                    throw .invalidValue("--vars", options["--vars"]!, expected: "a JSON object")
                }
                for member in members {
                    guard let s = member.value.stringValue else {
                        throw .invalidValue("--vars", options["--vars"]!, expected: "string values")
                    }
                    vars[member.key] = s
                }
            }
            mode = .eval(
                expr: expr, auth: try json("--auth") ?? .null, data: try json("--data") ?? .null, vars: vars,
                query: try json("--query"), now: now)
        case "check":
            guard let rules = options["--rules"] else { throw .missingOption("--rules") }
            guard let data = options["--data"] else { throw .missingOption("--data") }
            guard let auth = try json("--auth") else { throw .missingOption("--auth") }
            guard let op = options["--op"], ["read", "write", "update"].contains(op) else {
                throw .invalidValue("--op", options["--op"] ?? "", expected: "read, write or update")
            }
            guard let path = options["--path"] else { throw .missingOption("--path") }
            mode = .check(
                rules: rules, data: data, auth: auth, op: op, path: path, value: try json("--value"),
                query: try json("--query"), now: now)
        case "lint":
            mode = .lint(file: file!)
        default:
            throw UsageError(message: "unknown rules command '\(verb)'; expected eval, check or lint")
        }
    }

    func run() throws {
        switch mode {
        case .eval(let expr, let auth, let data, let vars, let query, let now):
            print(RulesCommandLine.eval(expr: expr, auth: auth, data: data, vars: vars, query: query, now: now))
        case .check(let rulesFile, let dataFile, let auth, let op, let path, let value, let query, let now):
            let source = try readFile(rulesFile)
            let dataText = try readFile(dataFile)
            let data: JSONValue
            do {
                data = try JSONValue.parse(dataText)
            } catch {
                throw CommandFailure("\(dataFile) is not valid JSON: \(error.userMessage)")
            }
            let result = RulesCommandLine.check(
                rulesSource: source, data: data, auth: auth, op: op, path: path, value: value, query: query, now: now)
            print(result.output)
            if result.exitCode != 0 { throw CommandFailure("", exitCode: result.exitCode) }
        case .lint(let file):
            let result = RulesCommandLine.lint(source: try readFile(file), fileName: file)
            if !result.output.isEmpty { print(result.output, terminator: result.output.hasSuffix("\n") ? "" : "\n") }
            if result.exitCode != 0 { throw CommandFailure("", exitCode: result.exitCode) }
        }
    }
}
