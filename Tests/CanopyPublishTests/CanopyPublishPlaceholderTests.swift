import Testing

@Suite struct CanopyPublishPlaceholderTests {
    @Test func builds() { #expect(Bool(true)) }
}
