// SQLiteConnectionTests -- the SQLite wrapper: statements, binding, errors that name SQL but not values.
import CSQLite
import Glibc
import Testing

@testable import CanopyStore

@Suite struct SQLiteConnectionTests {
    let directory = TemporaryDirectory()

    @Test func bindsStepsAndReadsColumns() throws {
        let connection = try SQLiteConnection(path: directory.file())
        try connection.execute("CREATE TABLE t (i INTEGER, d REAL, s TEXT, n TEXT)")
        let insert = try connection.prepare("INSERT INTO t VALUES (?1, ?2, ?3, ?4)")
        try insert.bind(Int64(-5), at: 1)
        try insert.bind(2.5, at: 2)
        try insert.bind("héllo\u{0}tail", at: 3)
        try insert.bind(nil, at: 4)
        try insert.run()
        #expect(connection.changes == 1)
        try insert.bind("", at: 3)
        try insert.run()

        let select = try connection.prepare("SELECT i, d, s, n FROM t ORDER BY rowid")
        #expect(try select.step())
        #expect(select.int64(at: 0) == -5)
        #expect(select.double(at: 1) == 2.5)
        #expect(select.text(at: 2) == "héllo\u{0}tail")
        #expect(select.isNull(at: 3) && select.text(at: 3) == nil)
        #expect(try select.step())
        #expect(select.text(at: 2) == "")
        #expect(try !select.step())
    }

    @Test func sqliteKeepsNoMemoryStatistics() async {
        // In a process of its own, where the first open is this one: with statistics on, every allocation of
        // SQLite takes a global mutex, and the memory in use would be counted here.
        await #expect(processExitsWith: .success) {
            let directory = TemporaryDirectory()
            let connection = try SQLiteConnection(path: directory.file())
            try connection.execute("CREATE TABLE t (k TEXT PRIMARY KEY); INSERT INTO t VALUES ('a'), ('b')")
            var used: Int64 = 0
            var highest: Int64 = 0
            guard sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &used, &highest, 0) == SQLITE_OK else { exit(2) }
            exit(used == 0 && highest == 0 ? 0 : 1)
        }
    }

    @Test func errorsCarryTheCodeAndSQL() throws {
        let connection = try SQLiteConnection(path: directory.file())
        try connection.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
        let insert = try connection.prepare("INSERT INTO t VALUES (?1)")
        try insert.bind("secret-value", at: 1)
        try insert.run()
        #expect {
            try insert.run()
        } throws: { error in
            let error = error as? SQLiteError
            let primaryKeyViolation = SQLITE_CONSTRAINT | (6 << 8)  // SQLITE_CONSTRAINT_PRIMARYKEY (a macro)
            return error?.resultCode == SQLITE_CONSTRAINT && error?.extendedResultCode == primaryKeyViolation
                && error?.sql == "INSERT INTO t VALUES (?1)" && error?.userMessage.contains("secret-value") == false
        }
        #expect { try connection.prepare("SELEC nonsense") } throws: { error in
            (error as? SQLiteError)?.sql == "SELEC nonsense" && (error as? SQLiteError)?.resultCode == SQLITE_ERROR
        }
    }

    @Test func readOnlyConnectionsCannotWrite() throws {
        let path = directory.file()
        try SQLiteConnection(path: path).execute("CREATE TABLE t (x)")
        let reader = try SQLiteConnection(path: path, mode: .readOnly)
        #expect { try reader.execute("INSERT INTO t VALUES (1)") } throws: {
            ($0 as? SQLiteError)?.resultCode == SQLITE_READONLY
        }
        #expect { try SQLiteConnection(path: directory.file("absent.sqlite"), mode: .readOnly) } throws: { error in
            (error as? SQLiteError)?.resultCode == SQLITE_CANTOPEN
        }
    }

    @Test func closeRefusesWhileStatementsLive() throws {
        let connection = try SQLiteConnection(path: directory.file())
        var statement: Statement? = try connection.prepare("SELECT 1")
        #expect { try connection.close() } throws: { ($0 as? SQLiteError)?.resultCode == SQLITE_BUSY }
        #expect(statement?.sql == "SELECT 1")
        statement = nil
        try connection.close()
    }

    @Test func theCachePreparesEachStatementOnce() throws {
        let connection = try SQLiteConnection(path: directory.file())
        var cache = StatementCache(connection: connection)
        let first = try cache.statement("SELECT ?1")
        try first.bind(Int64(7), at: 1)
        #expect(try first.step())
        let second = try cache.statement("SELECT ?1")
        #expect(first === second)
        // Handed out reset: it runs again from the start with its bindings kept.
        #expect(try second.step() && second.int64(at: 0) == 7)
        #expect(try cache.statement("SELECT 2") !== first)
        cache.removeAll()
    }
}
