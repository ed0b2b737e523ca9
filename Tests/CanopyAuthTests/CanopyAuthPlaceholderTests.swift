import Testing

@Suite struct CanopyAuthPlaceholderTests {
    @Test func builds() { #expect(Bool(true)) }
}
