// Package kernel runs code for toolboxd: Python in one persistent Jupyter
// kernel (state carries over between calls; output, results, images and
// tracebacks come back; a timeout interrupts, then restarts), JavaScript and
// TypeScript with node, and a Jupyter server for people, started on demand.
//
// toolboxd is a static Go binary without ZMQ, so the package starts the
// ipykernel process itself and talks to it through a small embedded Python
// helper (helper.py, needing only pyzmq) that relays Jupyter messages as
// JSON lines on its stdin and stdout. Starting the kernel directly, rather than through
// `jupyter server`, gives a first result in about a second instead of tens.
//
//	k := kernel.New(kernel.Config{Dir: "/workspace"}, logger)
//	if err := k.Start(ctx); err != nil { ... }
//	defer k.Close()
//	res, err := k.Execute(ctx, kernel.Python, "x = 41\nx + 1", 30*time.Second)
//	// res.Outputs[0].Text == "42"
package kernel
