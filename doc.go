// Package drydock holds the domain of the Drydock orchestrator: jobs, events,
// tokens, sandboxes and the interfaces of every backend boundary (Store,
// Runtime, Agent, ArtifactStore). It imports nothing but the standard library,
// so the public client SDK (package client) can depend on it cheaply.
//
// Adapters live in packages named after what they wrap (store/sqlite,
// runtime/docker, artifact/local, ...) and import this package, never each
// other.
package drydock
