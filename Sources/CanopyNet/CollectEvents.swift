// CollectEvents -- drains a pull parser into an array: the shared body of the parsers' fuzzing entry points.

/// Pulls events until `next` returns nil (more bytes needed) or throws: the body of the parsers' pure entry
/// points for fuzzing and tests (`HTTPRequestParser.parseAll`, `WebSocketDecoder.decodeAll`).
func collectEvents<Event, Failure: Error>(_ next: () throws(Failure) -> Event?) -> (events: [Event], error: Failure?) {
    var events: [Event] = []
    do {
        while let event = try next() { events.append(event) }
        return (events, nil)
    } catch {
        return (events, error)
    }
}
