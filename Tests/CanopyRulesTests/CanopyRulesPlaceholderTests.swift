import Testing

@Suite struct CanopyRulesPlaceholderTests {
    @Test func builds() { #expect(Bool(true)) }
}
