// NATSParserTests -- the server side of the protocol from bytes: every operation, split anywhere, and every
// malformed or oversized input refused with its reason.

import Testing

@testable import CanopyNATS

@Suite struct NATSParserTests {
    private func operations(_ text: String, limits: NATSParserLimits = .init(), chunk: Int = .max) throws
        -> [NATSServerOperation]
    {
        var parser = NATSParser(limits: limits)
        var out: [NATSServerOperation] = []
        let bytes = Array(text.utf8)
        var offset = 0
        repeat {
            let end = min(bytes.count, offset + max(1, chunk))
            parser.append(bytes[offset..<end])
            offset = end
            while let operation = try parser.next() { out.append(operation) }
        } while offset < bytes.count
        return out
    }

    private func error(_ text: String, limits: NATSParserLimits = .init()) -> NATSProtocolError? {
        do {
            _ = try operations(text, limits: limits)
            return nil
        } catch let error as NATSProtocolError {
            return error
        } catch {
            return nil
        }
    }

    private let stream = """
        INFO {"server_id":"S1","server_name":"n1","version":"2.9.10","max_payload":1048576,"headers":true,\
        "jetstream":true,"connect_urls":["127.0.0.1:4223","127.0.0.1:4224"]}\r
        PING\r
        pong\r
        +OK\r
        -ERR 'Authorization Violation'\r
        MSG a.b 7 5\r
        hello\r
        MSG a.b 7 _INBOX.x.1 0\r
        \r
        HMSG a.c 9 24 29\r
        NATS/1.0\r
        K: v\r
        K: w\r
        \r
        body!\r
        HMSG _INBOX.x.2 3 30 30\r
        NATS/1.0 503 No Responders\r
        \r
        \r

        """

    @Test(arguments: [Int.max, 1, 2, 7, 64])
    func parsesEveryOperationHoweverTheBytesAreSplit(chunk: Int) throws {
        let ops = try operations(stream, chunk: chunk)
        try #require(ops.count == 9)
        guard case .info(let info) = ops[0] else { Issue.record("not INFO"); return }
        #expect(info.serverName == "n1" && info.maxPayload == 1_048_576 && info.headers && info.jetStream)
        #expect(info.connectURLs == ["127.0.0.1:4223", "127.0.0.1:4224"])
        guard case .ping = ops[1], case .pong = ops[2], case .ok = ops[3] else { Issue.record("control ops"); return }
        guard case .error(let text) = ops[4] else { Issue.record("not -ERR"); return }
        #expect(text == "Authorization Violation")
        guard case .message(let plain) = ops[5], case .message(let empty) = ops[6], case .message(let headed) = ops[7],
            case .message(let status) = ops[8]
        else { Issue.record("not messages"); return }
        #expect(plain.subject == "a.b" && plain.sid == 7 && plain.replyTo == nil && plain.text == "hello")
        #expect(plain.headers == nil)
        #expect(empty.replyTo == "_INBOX.x.1" && empty.payload.isEmpty)
        #expect(headed.headers?["K"] == "v" && headed.headers?.fields.count == 2 && headed.text == "body!")
        #expect(headed.headers?.status == nil)
        #expect(status.status == 503 && status.headers?.statusDescription == "No Responders" && status.payload.isEmpty)
    }

    @Test func aPayloadMayHoldCRLFAndProtocolText() throws {
        let ops = try operations("MSG s 1 12\r\nPING\r\nPONG\r\n\r\n")
        guard case .message(let message) = ops.first else { Issue.record("no message"); return }
        #expect(message.text == "PING\r\nPONG\r\n" && ops.count == 1)
    }

    @Test func incompleteInputWaitsForMore() throws {
        var parser = NATSParser()
        parser.append(Array("MSG s 1 5\r\nhel".utf8))
        #expect(try parser.next() == nil)
        parser.append(Array("lo\r".utf8))
        #expect(try parser.next() == nil)
        parser.append(Array("\n".utf8))
        guard case .message(let message) = try parser.next() else { Issue.record("no message"); return }
        #expect(message.text == "hello")
    }

    @Test func refusesMalformedInput() {
        #expect(error("PING\n") == .badFraming("a control line ended by a bare LF"))
        #expect(error("\n") == .badFraming("a control line ended by a bare LF"))
        #expect(error("\r\n") == .unknownOperation(""))
        #expect(error("HELLO world\r\n") == .unknownOperation("HELLO"))
        #expect(error("PING now\r\n") == .badArguments("PING takes none"))
        #expect(error("MSG a 1\r\n") == .badArguments("MSG has 2 arguments"))
        #expect(error("MSG a 1 b c 5\r\n") == .badArguments("MSG has 5 arguments"))
        #expect(error("MSG a x 5\r\n") == .badArguments("sid is not a number"))
        #expect(error("MSG a 1 -5\r\n") == .badArguments("size '-5' is not a decimal number"))
        #expect(error("MSG a 1 5x\r\n") == .badArguments("size '5x' is not a decimal number"))
        #expect(error("MSG a 1 99999999999999999999999\r\n") != nil)
        #expect(error("MSG a 1 3\r\nhello\r\n") == .badFraming("a payload not followed by CRLF (its size was wrong)"))
        #expect(error("HMSG a 1 30 20\r\n") == .badArguments("header size 30 exceeds total size 20"))
        #expect(error("HMSG a 1 12 12\r\nNATS/2.0\r\n\r\n\r\n") == .badHeaders("the version line is not NATS/1.0"))
        #expect(error("HMSG a 1 15 15\r\nNATS/1.0\r\nK\r\n\r\n\r\n") == .badHeaders("a line without 'Name:'"))
        #expect(error("HMSG a 1 16 16\r\nNATS/1.0\r\nK: v\r\n\r\n") == .badHeaders("the block does not end with an empty line"))
        #expect(error("HMSG a 1 15 15\r\nNATS/1.0 5x\r\n\r\n\r\n") == .badHeaders("status '5x' is not a three-digit code from 100 to 999"))
        // A code written with leading zeros is not a status: NATS/1.0 006 once parsed as 6, which cannot be written back.
        #expect(error("HMSG a 1 16 16\r\nNATS/1.0 006\r\n\r\n\r\n") == .badHeaders("status '006' is not a three-digit code from 100 to 999"))
        #expect(error("INFO [1,2]\r\n") == .badInfo("not a JSON object"))
        #expect(error("INFO {\"max_payload\":0}\r\n") == .badInfo("max_payload is not a positive integer"))
        if case .badInfo = error("INFO {bad\r\n") {} else { Issue.record("INFO with bad JSON accepted") }
    }

    @Test func boundsLinesAndPayloadsBeforeBufferingThem() {
        let limits = NATSParserLimits(maxControlLine: 64, maxPayload: 100)
        // A line without its CRLF: refused once it reaches the limit, however it keeps coming.
        #expect(error(String(repeating: "X", count: 64), limits: limits) == .lineTooLong(limit: 64))
        #expect(error("INFO {\"a\":\"\(String(repeating: "x", count: 80))\"}\r\n", limits: limits) == .lineTooLong(limit: 64))
        // A message larger than the limit is refused from its control line, before its payload is read.
        #expect(error("MSG a 1 101\r\n", limits: limits) == .payloadTooLarge(size: 101, limit: 100))
        #expect(error("HMSG a 1 12 101\r\n", limits: limits) == .payloadTooLarge(size: 101, limit: 100))
        #expect(error("MSG a 1 100\r\n", limits: limits) == nil)
    }

    @Test func afterAViolationNothingMoreIsParsed() throws {
        var parser = NATSParser()
        parser.append(Array("BOGUS\r\nPING\r\n".utf8))
        #expect(throws: NATSProtocolError.unknownOperation("BOGUS")) { try parser.next() }
        parser.append(Array("PING\r\n".utf8))
        #expect(throws: NATSProtocolError.unknownOperation("BOGUS")) { try parser.next() }
        #expect(parser.bufferedBytes == 0)
    }
}

@Suite struct NATSEncoderTests {
    @Test func writesTheClientOperations() throws {
        let pub = try NATSEncoder.publish(subject: "a.b", replyTo: "r.1", headers: nil, payload: Array("hi".utf8))
        #expect(String(decoding: pub, as: UTF8.self) == "PUB a.b r.1 2\r\nhi\r\n")
        var headers = NATSHeaders()
        headers.append("Nats-Msg-Id", "x1")
        let hpub = try NATSEncoder.publish(subject: "a", replyTo: nil, headers: headers, payload: Array("hi".utf8))
        #expect(String(decoding: hpub, as: UTF8.self) == "HPUB a 29 31\r\nNATS/1.0\r\nNats-Msg-Id: x1\r\n\r\nhi\r\n")
        #expect(String(decoding: try NATSEncoder.subscribe(subject: "a.*.>", queue: "q", sid: 4), as: UTF8.self)
            == "SUB a.*.> q 4\r\n")
        #expect(String(decoding: NATSEncoder.unsubscribe(sid: 4, max: 1), as: UTF8.self) == "UNSUB 4 1\r\n")
    }

    @Test(arguments: ["", "a b", "a\r\nPUB x 1", "a..b", ".a", "a.", "a\tb", "a.>.b"])
    func refusesSubjectsThatWouldBreakTheLine(subject: String) {
        #expect(throws: NATSError.self) { try NATSEncoder.subscribe(subject: subject, queue: nil, sid: 1) }
        #expect(throws: NATSError.self) { try NATSEncoder.publish(subject: subject, replyTo: nil, headers: nil, payload: []) }
    }

    @Test func refusesWildcardsInPublishesAndForgedHeaders() {
        #expect(throws: NATSError.self) { try NATSEncoder.publish(subject: "a.*", replyTo: nil, headers: nil, payload: []) }
        #expect(throws: NATSError.self) { try NATSEncoder.publish(subject: "a", replyTo: "r.>", headers: nil, payload: []) }
        #expect(throws: NATSError.self) { try NATSEncoder.subscribe(subject: "a", queue: "q w", sid: 1) }
        #expect(throws: NATSError.self) { try NATSHeaders([("K", "v\r\nNats-Expected-Last-Sequence: 1")]).encoded() }
        #expect(throws: NATSError.self) { try NATSHeaders([("K: x", "v")]).encoded() }
        #expect(throws: NATSError.self) { try NATSHeaders([("", "v")]).encoded() }
        #expect(throws: NATSError.self) { try NATSHeaders(status: 6).encoded() }
        #expect(throws: NATSError.self) { try NATSHeaders(status: 503, statusDescription: "No\r\nResponders").encoded() }
    }

    @Test func aParsedStatusLineIsWrittenBackAsItWasRead() throws {
        let block = Array("NATS/1.0 503 No\tResponders\r\nK: v\r\n\r\n".utf8)
        let headers = try NATSHeaders.parse(block[...])
        #expect(headers.status == 503 && headers.statusDescription == "No\tResponders")
        #expect(try headers.encoded() == block)
    }
}

@Suite struct NATSServerAddressTests {
    @Test func parsesURLsAndLists() {
        #expect(NATSServerAddress("nats://127.0.0.1:4222") == NATSServerAddress(host: "127.0.0.1", port: 4222))
        #expect(NATSServerAddress("10.0.0.2:5000") == NATSServerAddress(host: "10.0.0.2", port: 5000))
        #expect(NATSServerAddress("nats.local") == NATSServerAddress(host: "nats.local", port: 4222))
        #expect(NATSServerAddress("[::1]:4223") == NATSServerAddress(host: "::1", port: 4223))
        #expect(NATSServerAddress("nats://a:0") == nil)
        #expect(NATSServerAddress("nats://a:b") == nil)
        #expect(NATSServerAddress("a b:1") == nil)
        #expect(NATSServerAddress.list("nats://a:1, nats://b:2")?.map(\.description) == ["a:1", "b:2"])
        #expect(NATSServerAddress.list("nats://a:1,nats://b:x") == nil)
    }

    @Test func readsTheSequencesOfAnAckSubject() {
        let v1 = JetStreamOrderedConsumer.sequences(ackSubject: "$JS.ACK.S.C.1.42.7.1700000000.3")
        #expect(v1?.stream == 42 && v1?.consumer == 7 && v1?.pending == 3)
        let v2 = JetStreamOrderedConsumer.sequences(ackSubject: "$JS.ACK.dom.acc.S.C.1.42.7.1700000000.3.tok")
        #expect(v2?.stream == 42 && v2?.consumer == 7 && v2?.pending == 3)
        #expect(JetStreamOrderedConsumer.sequences(ackSubject: "$JS.ACK.S.C.1.x.7.1.3") == nil)
        #expect(JetStreamOrderedConsumer.sequences(ackSubject: "_INBOX.a.b") == nil)
    }
}
