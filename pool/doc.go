// Package pool keeps warm sandboxes: per profile, a configured number of
// sandboxes started ahead of time and ready, so that a job's sandbox is a
// claim (a few milliseconds) instead of a start (about a second headless,
// several seconds with a desktop).
//
// A warm sandbox carries LabelPool (the pool's owner: node id plus a random
// incarnation) and a placeholder job label until a job claims it. Claiming
// goes through the runtime (Runtime.Claim): toolboxd checks that the
// workspace is empty and no shell ever ran, then replaces its token and VNC
// password with fresh ones, so the job never holds a secret the pool held;
// the runtime keeps the new secrets and the job on the host, where Get
// finds them after an orchestrator restart. A container's labels cannot
// change, so the claim is not a label: Unclaimed tells the two apart from
// what Get and List return.
//
// Each warm sandbox goes to one job: Claim takes it from the pool under a
// lock, and the runtime and toolboxd each refuse a second claim. A claim
// never waits: with no warm sandbox, or a job the pool cannot serve (environment,
// labels, image or resources other than the pool's; egress is no reason, as
// the host-side proxy applies the job's list after the claim), Claim
// returns nil and the caller creates a sandbox cold. Run refills the pool
// in the background, one sandbox at a time, replaces sandboxes older than
// MaxAge and, when the runtime is an ImageResolver, those whose image tag
// now names another image, and destroys the warm sandboxes when it stops.
// Warm sandboxes a previous process left behind are the runner's reaper's:
// their owner is not this pool's.
package pool
