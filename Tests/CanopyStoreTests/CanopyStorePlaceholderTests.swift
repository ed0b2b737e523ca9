import Testing

@Suite struct CanopyStorePlaceholderTests {
    @Test func builds() { #expect(Bool(true)) }
}
