// Package runner is the job queue's worker. A Runner claims runnable jobs from
// the store through leases, keeps each lease alive with heartbeats while the
// job runs, and drives one job end to end: sandbox, agent, archive, teardown.
//
// Leases make the queue safe with several servers on one store and make
// recovery simple: a job whose worker died keeps status running with an
// expiring lease, and the next claimer resumes it with the same sandbox (or
// fails it with the reason when the sandbox is gone). A restarted server
// expires the leases of its previous incarnation at once instead of waiting
// for the TTL.
package runner
