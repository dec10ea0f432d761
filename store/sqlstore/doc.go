// Package sqlstore holds what the SQLite and Postgres stores share above
// their SQL dialects, so that the two answer alike by construction rather
// than by two copies kept in step: the errors a store returns for a missing
// job, a lost lease or a full message log, and how internal errors are
// wrapped; the checks a job, an event and a token pass before any SQL runs;
// the job list's limits and cursor; and a job's columns, their JSON
// encoding and how a scanned row becomes a drydock.Job.
//
// Each store keeps its queries, its transactions and its time and NULL
// types. The store conformance suite (store/storetest) is what both pass.
package sqlstore
