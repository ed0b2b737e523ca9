// CSQLite -- SQLite from Debian's libsqlite3-dev.
#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

// sqlite3_db_config is variadic. Keeps the WAL as it is when the last connection closes (no checkpoint, no reset).
static inline void csqlite_no_checkpoint_on_close(sqlite3 *db) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}

// sqlite3_config is variadic. Turns off SQLite's memory statistics for the process: with them, every allocation
// and free takes a global mutex (Debian's build has no lookaside, so every small allocation of a statement's step
// is one). Only takes effect before SQLite initializes (the first open); returns SQLITE_MISUSE after.
static inline int csqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
