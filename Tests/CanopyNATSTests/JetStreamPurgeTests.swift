// JetStreamPurgeTests -- what nats-server 2.9 does with `STREAM.PURGE` by subject, below a sequence or keeping
// the newest, the calls a cluster's snapshots trim logs with (Cluster.md#Snapshots).

import CanopyTestSupport
import Foundation
import Testing

@testable import CanopyNATS

@Suite(.timeLimit(.minutes(1))) struct JetStreamPurgeTests {
    @Test func purgeBySubjectBelowASequenceOrKeepingTheNewest() throws {
        let cluster = try startCluster(count: 3)
        let connection = try connect(cluster)
        defer { connection.close() }
        let js = JetStream(connection, timeout: .seconds(2))
        let stream = "CANOPY_LOG_T"
        _ = try untilAvailable { try js.createStream(JetStreamStreamConfig(name: stream, subjects: ["t.*"], replicas: 3)) }
        // Two subjects interleaved: a1 b2 a3 b4 a5 b6 a7 b8 a9 b10, each fenced on its subject's previous message.
        var last: [String: UInt64] = ["t.a": 0, "t.b": 0]
        for i in 1...10 {
            let subject = i % 2 == 1 ? "t.a" : "t.b"
            let ack = try untilAvailable {
                try js.publish(subject, payload: Array("\(i)".utf8), options: .init(expectedLastSubjectSequence: last[subject]))
            }
            #expect(ack.sequence == UInt64(i))
            last[subject] = ack.sequence
        }

        // `seq` with `filter` removes that subject's messages strictly below the sequence; others stay.
        #expect(try js.purge(stream: stream, filter: "t.a", below: 5) == 2)
        #expect(try js.firstMessage(stream: stream, subject: "t.a")?.sequence == 5)
        #expect(try js.firstMessage(stream: stream, subject: "t.b")?.sequence == 2)
        var info = try js.streamInfo(stream)
        #expect(info.firstSequence == 2 && info.messages == 8)
        // Each stored message keeps the fence header it was published with: a reader can tell a gap.
        #expect(try js.firstMessage(stream: stream, subject: "t.a")?.headers?["Nats-Expected-Last-Subject-Sequence"] == "3")
        // A purge below a sequence that is already gone removes nothing, and never the subject's last message
        // when the sequence is at or below it.
        #expect(try js.purge(stream: stream, filter: "t.a", below: 3) == 0)
        // The fence still works after a purge: the last message is what it was.
        let stale = #expect(throws: JetStreamError.self) {
            try js.publish("t.a", payload: Array("stale".utf8), options: .init(expectedLastSubjectSequence: 7))
        }
        #expect(stale?.isWrongLastSequence == true)
        #expect(try js.publish("t.a", payload: Array("11".utf8), options: .init(expectedLastSubjectSequence: 9)).sequence == 11)

        // `keep` with `filter` keeps that subject's newest N.
        #expect(try js.purge(stream: stream, filter: "t.b", keep: 2) == 3)
        #expect(try js.firstMessage(stream: stream, subject: "t.b")?.sequence == 8)
        info = try js.streamInfo(stream)
        #expect(info.firstSequence == 5 && info.messages == 6)

        // 2.9 refuses `seq` and `keep` together, and changes nothing.
        let both = #expect(throws: JetStreamError.self) { try js.purge(stream: stream, filter: "t.a", below: 9, keep: 1) }
        #expect(both?.status == 400 && both?.errorCode == 10003, "\(String(describing: both))")
        #expect(try js.streamInfo(stream).messages == 6)
        // next_by_subj past the subject's last message: none.
        #expect(try js.firstMessage(stream: stream, subject: "t.a", from: 12) == nil)
        try js.deleteStream(stream)
    }
}
