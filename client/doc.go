// Package client is the Go SDK for Drydock's HTTP API: schedule jobs, read
// their status and event logs (paged or live over Server-Sent Events), wait
// for them to finish, cancel them and download their workspaces. The drydock
// CLI is built on it.
//
// Errors the server returns come back as *drydock.Error with the server's
// code and message, so drydock.ErrorCode and drydock.IsRetryable work on the
// client side too. A server that cannot be reached gives a *ConnError, whose
// code is drydock.EUNAVAILABLE. An answer that is not the API's (another web
// server's page, a proxy's 502) gives a *ForeignAnswerError: the status, the
// content type and a short excerpt escaped for a terminal, never the page;
// its code follows the status. Messages of the API's own errors are the
// server's text as sent: escape them (package termtext) before printing them
// to a terminal, as the CLI does.
//
// Every request with a body sends it as Content-Type: application/json; the
// server refuses other bodies with 415.
//
// Schedule is safe to retry: every request carries an Idempotency-Key
// (random, or WithIdempotencyKey), and Schedule sends it again by itself
// when the answer is lost (connection failure, 502, 503, 504), so a job is
// never created twice. When the outcome stays unknown it returns a
// *ScheduleError naming the key; scheduling again with that key is safe.
//
// A job's secrets go in drydock.JobSpec.Secrets (environment variables for
// the sandbox's processes). They are write-only: a job read back carries
// SecretNames, never the values.
//
// Calls take a context and nothing else bounds them: event streams and
// downloads may legitimately run for hours.
package client
