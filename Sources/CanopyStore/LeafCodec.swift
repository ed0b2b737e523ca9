// LeafCodec -- JSON text for the primitives stored in leaf and priority columns.
//
// Format: exactly one JSON primitive (RFC 8259): `true`, `false`, a number, or a string, as written by
// CanopyCore's `JSONValue.serialized()` and read by `JSONValue.parse`. Numbers are printed the way
// JavaScript prints them, so a double with an integral value (3.0) reads back as `.int(3)`; CanopyCore
// treats the two as the same number, and clients see the same text.
import CanopyCore

enum LeafCodec {
    /// The JSON text of a primitive.
    ///
    /// - Throws: `.invalidMutation` for null, arrays, objects and non-finite doubles.
    static func encode(_ value: JSONValue, path: [String]) throws(StoreError) -> String {
        var text: [UInt8] = []
        try encode(value, path: path, into: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Replaces `text` with the JSON text of a primitive, as UTF-8 (the writer binds it without making a `String`).
    ///
    /// - Throws: `.invalidMutation` for null, arrays, objects and non-finite doubles.
    static func encode(_ value: JSONValue, path: [String], into text: inout [UInt8]) throws(StoreError) {
        switch value {
        case .bool, .int, .string: break
        case .double(let number):
            guard number.isFinite else {
                throw StoreError(.invalidMutation, "a stored number must be finite", location: display(path))
            }
        case .null, .array, .object:
            throw StoreError(
                .invalidMutation, "only a string, number or boolean can be stored", location: display(path))
        }
        text.removeAll(keepingCapacity: true)
        value.write(into: &text)
    }

    /// The primitive written by `encode`.
    ///
    /// - Throws: `.corrupt` when `text` is not one JSON primitive.
    static func decode(_ text: String, key: String) throws(StoreError) -> JSONValue {
        let value: JSONValue
        do {
            value = try JSONValue.parse(text, options: JSONParseOptions(maxDepth: 1))
        } catch {
            throw StoreError(.corrupt, "stored value is not valid JSON (\(error.reason))", location: "/" + key)
        }
        switch value {
        case .bool, .int, .double, .string: return value
        case .null, .array, .object:
            throw StoreError(.corrupt, "stored value is not a JSON primitive", location: "/" + key)
        }
    }

    /// A path as shown in errors: "/a/b" ("/" for the root).
    static func display(_ path: [String]) -> String { "/" + path.joined(separator: "/") }
}
