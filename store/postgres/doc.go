// Package postgres implements drydock.Store on PostgreSQL (pgx, pgxpool),
// the store of several orchestrator replicas sharing one database.
//
// The schema is created and upgraded on Open by goose from the SQL files
// embedded from migrations/, numbered as the SQLite store's; replicas that
// start together serialise on an advisory lock, so each migration runs once.
//
// Every method is one statement (its own transaction) except CancelJob, which
// reads and updates the job under a row lock. A job and its first event are
// inserted by one statement, so CreateJob costs one round trip and one commit;
// concurrent commits share WAL flushes, and the pool (at least 16 connections
// unless the DSN sets pool_max_conns) lets that many wait on a flush at once.
// Statements are prepared once per connection (pgx's statement cache); behind
// a transaction-pooling proxy such as PgBouncer, add
// default_query_exec_mode=exec to the DSN.
//
// The job queue lives in the jobs table (lease owner and expiry). A claim
// locks the oldest runnable row with FOR UPDATE SKIP LOCKED, so replicas
// claiming at once never take the same job and never wait for each other.
// Lease-guarded updates match on lease_owner, and an event's seq comes from
// incrementing jobs.last_seq in the inserting statement, which locks the job
// row: seqs stay gapless whichever replica appends.
//
// Times the store picks (a claim, a lease expiry, a finish, an event or job
// without a time) come from the database clock, so that lease expiry is
// judged by one clock however far the replicas' clocks drift. Times are kept
// to the microsecond and returned in UTC.
//
// Postgres text holds neither NUL bytes nor invalid UTF-8, which SQLite
// stores. Such user input (a task, metadata) is refused as EINVALID; text a
// worker reports (an error, a summary) is stored with U+FFFD in their place,
// so that a job can always end. Event data is a json column, which keeps the
// worker's text exactly, \u0000 included.
package postgres
