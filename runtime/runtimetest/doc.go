// Package runtimetest is the conformance suite every drydock.Runtime passes.
//
// A backend's test calls Run with a constructor and the image to create
// sandboxes from:
//
//	func TestConformance(t *testing.T) {
//		runtimetest.Run(t, func(t *testing.T) drydock.Runtime { return newRuntime(t) },
//			runtimetest.Options{Image: "drydock-sandbox:headless"})
//	}
//
// The suite checks the lifecycle (create, get with endpoint and token, list
// by labels, toolboxd healthy at the endpoint, destroy), that labels are
// applied, that destroy is idempotent, that a new Runtime instance (an
// orchestrator restart) finds a sandbox and its token again, and that a
// failed create leaves nothing behind. It talks to toolboxd with a minimal
// GET /v1/health of its own, so it depends on no toolbox package.
//
// ProbeScript and CheckProbe are the isolation probe the runtimes' tests run
// inside a sandbox through toolboxd (runtime/docker's TestProbeFromInside,
// runtime/kubernetes's TestRealNodeProbeFromInside): the checks are the
// same for every runtime, and ProbeOptions names what a runtime's sandboxes
// are made of (volumes, what it binds in, what pid 1 is).
package runtimetest
