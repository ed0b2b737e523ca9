// PublishBenchmark -- `canopy bench publish`: one atomic publish vs the seed design's eight writes.

/// Placeholder: parses its options; the benchmark itself is not written yet.
struct PublishBenchmark {
    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() { throw .unknownOption(option, command: "bench publish") }
    }

    func run() throws { throw CommandFailure("canopy bench publish is not implemented yet") }
}
