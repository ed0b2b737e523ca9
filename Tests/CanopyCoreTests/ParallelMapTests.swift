// ParallelMapTests -- `parallelMap` is `map`, in order, whether or not it splits the work.

import CanopyCore
import Testing

@Suite struct ParallelMapTests {
    @Test(arguments: [0, 1, 7, 511, 512, 1023, 1024, 1025, 4099])
    func itIsMapInOrder(count: Int) {
        let items = Array(0..<count)
        #expect(items.parallelMap(minimumPerChunk: 512) { $0 * 3 + 1 } == items.map { $0 * 3 + 1 })
        // Chunks of uneven work still come back in order.
        let strings = items.map { String(repeating: "x", count: $0 % 97) }
        #expect(strings.parallelMap(minimumPerChunk: 100) { $0.count } == strings.map(\.count))
    }
}
