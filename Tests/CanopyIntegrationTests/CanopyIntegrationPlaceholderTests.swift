import Testing

@Suite struct CanopyIntegrationPlaceholderTests {
    @Test func builds() { #expect(Bool(true)) }
}
