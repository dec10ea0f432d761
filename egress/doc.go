// Package egress is the host-side proxy through which a sandbox reaches the
// network, and the only way it can: sandboxes run without a network
// interface (Docker and Podman --network none).
//
// For each sandbox the orchestrator opens a unix socket in the sandbox's
// host-side state directory, which is mounted into the sandbox; toolboxd
// listens on 127.0.0.1:3128 inside the sandbox and pipes each connection to
// that socket, and the sandbox's HTTP_PROXY, HTTPS_PROXY and ALL_PROXY name
// it. The proxy speaks CONNECT (TLS and any other TCP) and absolute-URI
// plain HTTP.
//
// Every connection is judged when it is made against the job's current
// allowlist (drydock.EgressRule; default deny), read through Config.Rules
// with a short cache that Changed drops. Open connections are judged again
// on every change and every RecheckInterval, and those whose destination is
// no longer allowed are closed. The proxy resolves names itself and dials
// the addresses it checked, so a name cannot be re-resolved elsewhere
// between the check and the dial.
//
// Addresses that are not public (loopback, private, link-local, shared,
// unspecified, multicast, reserved) are refused whatever the job's rules
// say, unless the operator lists them in Config.Private: a job's owner is
// not the host's administrator, and neither a rule such as "127.0.0.1:8080"
// nor a name that resolves to such an address (DNS rebinding) may reach the
// orchestrator's API, the host's other services or the cloud's metadata
// service.
//
// Refusals answer 403 (or 502 when a destination cannot be resolved or
// reached) with a plain-text body naming the destination and how to allow
// it, and are reported to Config.OnDeny. The proxy never dials anything but
// TCP, so the engine's socket and other sandboxes' sockets are out of its
// reach by construction.
package egress
