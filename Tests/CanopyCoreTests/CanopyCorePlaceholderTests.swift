import Testing

@Suite struct CanopyCorePlaceholderTests {
    @Test func builds() { #expect(Bool(true)) }
}
