// Package sqlite implements drydock.Store on an embedded SQLite database
// (modernc.org/sqlite, pure Go), the default store of a single server.
//
// The database runs in WAL mode. Reads go to a pool of read-only connections
// and never wait for writes. Writes go through one connection owned by one
// goroutine that commits every write waiting at that moment in a single
// transaction (group commit), each write under its own savepoint so that one
// failure does not undo the others. Commits use synchronous=FULL: a write
// that returned nil survives a crash of the process and a power loss, and
// batching amortises the fsync over all concurrent callers.
//
// The schema is created and upgraded on Open by goose from the SQL files
// embedded from migrations/. Times are stored as UTC text with microseconds.
// The job queue lives in the jobs table (lease owner and expiry); since all
// writes are serialised, a claim is a plain SELECT then UPDATE.
//
// Open needs a file path: the writer and the readers are separate
// connections, so an in-memory database would not be shared between them.
package sqlite
