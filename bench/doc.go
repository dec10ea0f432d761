// Package bench measures Drydock on the machine it runs on: sandbox cold
// start per profile and engine, /schedule to the first tool call of a real
// server (cold, and warm when the server has a sandbox pool), toolboxd round
// trips beside the engine's own exec in the same sandbox, schedule
// throughput and status latency, the agent's per-step overhead, workspace
// archive throughput, and how many idle desktop sandboxes fit. The
// isolation measure runs the sandbox figures under runc and under gVisor on
// one engine, the two taking turns, and pairs them with their ratio
// (Compare); a sandbox's memory there is what the host pays, read both from
// its cgroup and from the PSS of its host processes (hostmem.go), since
// gVisor's sentry and gofer are not the sandbox's own processes.
//
// Every measure appends Results (a distribution with p50/p95/p99, or one
// figure) to a Report that also describes the machine and names the command;
// Targets checks the targets against what was measured and says so
// when one is missed or could not be measured, never hiding it. The
// `drydock bench` subcommands are thin wrappers; docs/BENCHMARKS.md holds
// the figures.
//
// Memory of a sandbox is read from its cgroup on the host, the same way for
// Docker and Podman: usage less the page cache that the kernel can drop
// (cache without shmem on cgroup v1, file without shmem on v2). Podman's
// Docker-compatible stats carry only the raw usage, page cache included,
// which is why it used to look heavier than Docker for the same processes.
package bench
