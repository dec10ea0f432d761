// Package memory is what the recall tool searches: an in-memory Okapi BM25
// index over a job's whole history, the part no longer in the prompt
// included.
//
// An Index holds passages of at most about a kilobyte, cut at line
// boundaries, so that a hit in a long output returns the lines that matter
// rather than the start of the output. It grows as the log grows; adding a
// text under a key that exists replaces it.
//
// A History feeds an Index from the job's event log (model turns, tool
// calls, observations, errors and notices; earlier recall results and the
// context manager's own notes stay out, so a search does not find itself)
// and from the whole outputs saved in the workspace (.drydock/outputs),
// which hold what was cut from long observations.
//
// BM25 rather than SQLite FTS5: the store's interface has no search, the
// PostgreSQL store has no BM25, and one job's history is small enough to
// index in memory in milliseconds.
package memory
