import Testing

@Suite struct CanopyNetPlaceholderTests {
    @Test func builds() { #expect(Bool(true)) }
}
