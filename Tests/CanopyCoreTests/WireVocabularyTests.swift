// WireVocabularyTests -- the shared wire vocabulary (`Wire`) spells exactly what Firebase clients send and expect.
import Testing

@testable import CanopyCore

@Suite struct WireVocabularyTests {
    @Test func envelopesSerializeAsTheProtocolSpellsThem() {
        #expect(Wire.control(Wire.Control.pong).serialized() == #"{"t":"c","d":{"t":"o","d":{}}}"#)
        #expect(Wire.control(Wire.Control.ping).serialized() == #"{"t":"c","d":{"t":"p","d":{}}}"#)
        #expect(Wire.control(Wire.Control.reset, "h:1").serialized() == #"{"t":"c","d":{"t":"r","d":"h:1"}}"#)
        #expect(
            Wire.request(7, Wire.Action.listen, [Wire.Key.path: "/a", Wire.Key.hash: ""]).serialized()
                == #"{"t":"d","d":{"r":7,"a":"q","b":{"p":"/a","h":""}}}"#)
        #expect(
            Wire.response(7, Wire.Status.ok, [:]).serialized() == #"{"t":"d","d":{"r":7,"b":{"s":"ok","d":{}}}}"#)
        #expect(
            Wire.push(Wire.Push.data, [Wire.Key.path: "/a", Wire.Key.data: 1, Wire.Key.tag: 3]).serialized()
                == #"{"t":"d","d":{"a":"d","b":{"p":"/a","d":1,"t":3}}}"#)
    }

    @Test func byteTemplatesMatchTheEnvelopes() {
        var bytes = Wire.pushOpening(Wire.Push.merge)
        bytes += Array(#""/a""#.utf8) + Wire.memberSeparator(Wire.Key.data) + Array(#"{"b":1}"#.utf8)
        bytes += Wire.memberSeparator(Wire.Key.tag) + Array("2}}}".utf8)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"t":"d","d":{"a":"m","b":{"p":"/a","d":{"b":1},"t":2}}}"#)
    }

    @Test(arguments: [
        (Wire.Action.stats, "s"), (Wire.Action.auth, "auth"), (Wire.Action.adminAuth, "gauth"),
        (Wire.Action.unauth, "unauth"), (Wire.Action.appCheck, "appcheck"), (Wire.Action.appCheckRemovedJS, "unappeck"),
        (Wire.Action.appCheckRemoved, "unappcheck"), (Wire.Action.listen, "q"), (Wire.Action.legacyListen, "l"),
        (Wire.Action.unlisten, "n"), (Wire.Action.legacyUnlisten, "u"), (Wire.Action.get, "g"), (Wire.Action.put, "p"),
        (Wire.Action.merge, "m"), (Wire.Action.onDisconnectPut, "o"), (Wire.Action.onDisconnectMerge, "om"),
        (Wire.Action.onDisconnectCancel, "oc"), (Wire.Push.listenRevoked, "c"), (Wire.Push.authRevoked, "ac"),
        (Wire.Status.permissionDenied, "permission_denied"), (Wire.Status.dataStale, "datastale"),
        (Wire.Status.invalidToken, "invalid_token"), (Wire.Status.expiredToken, "expired_token"),
        (Wire.Status.failure, "failure"), (Wire.Status.unavailable, "unavailable"), (Wire.Status.tooBig, "too_big"),
        (Wire.Handshake.timestamp, "ts"), (Wire.Handshake.version, "v"), (Wire.Handshake.host, "h"),
        (Wire.Handshake.session, "s"), (Wire.Key.credential, "cred"), (Wire.Key.authOverride, "authvar"),
        (Wire.Key.noAuth, "noauth"), (Wire.Key.warnings, "w"), (Wire.Warning.noIndex, "no_index"),
        (Wire.Control.handshake, "h"), (Wire.Control.shutdown, "s"), (Wire.Control.switchAck, "a"),
        (Wire.Control.endTransmission, "n"), (Wire.version, "5"), (Wire.keepAliveFrame, "0"),
    ])
    func namesAreFirebases(name: String, expected: String) {
        #expect(name == expected)
    }
}
