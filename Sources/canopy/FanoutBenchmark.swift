// FanoutBenchmark -- `canopy bench fanout`: realtime fan-out over loopback, compared with Redis pub/sub.

/// Placeholder: parses its options; the benchmark itself is not written yet.
struct FanoutBenchmark {
    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() { throw .unknownOption(option, command: "bench fanout") }
    }

    func run() throws { throw CommandFailure("canopy bench fanout is not implemented yet") }
}
