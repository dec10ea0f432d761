package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RequireNode skips the test unless node (and, for TypeScript, the
// typescript package) is installed.
func RequireNode(t testing.TB, typescript bool) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; run scripts/testenv/sandbox-tools.sh")
	}
	if typescript {
		if _, err := New(Config{}, nil).typeScriptModule(); err != nil {
			t.Skip("typescript is not installed; run scripts/testenv/sandbox-tools.sh")
		}
	}
}

// nodeKernel is a Kernel for JavaScript and TypeScript only: they need no
// Start, as each run is its own node process.
func nodeKernel(t *testing.T) *Kernel {
	k := New(Config{Dir: t.TempDir(), Env: []string{"HOME=" + t.TempDir()}}, testLogger(t))
	t.Cleanup(func() { k.Close() })
	return k
}

func TestJavaScript(t *testing.T) {
	t.Parallel()
	RequireNode(t, false)
	k := nodeKernel(t)
	// A package in the workspace, to check that require and import resolve
	// from the working directory although the code arrives on stdin.
	pkg := filepath.Join(k.cfg.Dir, "node_modules", "greet")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "index.js"), []byte(`module.exports = (n) => "hello " + n;`), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, code     string
		stdout, stderr string
		exit           int
		errName        string
	}{
		{"commonjs", `const greet = require("greet"); console.log(greet("cjs")); console.error("note")`,
			"hello cjs\n", "note\n", 0, ""},
		{"module with top-level await", `import greet from "greet";
const v = await Promise.resolve(greet("esm"));
console.log(v, typeof require("node:path").join)`,
			"hello esm function\n", "", 0, ""},
		{"exit code", `process.exitCode = 3; console.log("bye")`, "bye\n", "", 3, "ExitError"},
		{"uncaught error", `null.x`, "", "", 1, "TypeError"},
		// As the OOM killer ends it: the reply says it was killed.
		{"killed", `process.kill(process.pid, "SIGKILL")`, "", "", -1, "Killed"},
	}
	for _, tt := range tests {
		r, err := k.Execute(t.Context(), JavaScript, tt.code, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if r.Stdout() != tt.stdout || r.ExitCode != tt.exit {
			t.Errorf("%s: stdout %q exit %d, want %q exit %d (stderr %q)", tt.name, r.Stdout(), r.ExitCode, tt.stdout, tt.exit, r.Stderr())
		}
		if tt.stderr != "" && r.Stderr() != tt.stderr {
			t.Errorf("%s: stderr %q, want %q", tt.name, r.Stderr(), tt.stderr)
		}
		if (r.Error == nil) != (tt.errName == "") || (r.Error != nil && r.Error.Name != tt.errName) {
			t.Errorf("%s: error %+v, want %q", tt.name, r.Error, tt.errName)
		}
	}
}

func TestJavaScriptTimeoutKills(t *testing.T) {
	t.Parallel()
	RequireNode(t, false)
	k := nodeKernel(t)
	start := time.Now()
	r, err := k.Execute(t.Context(), JavaScript, `console.log("start"); while (true) {}`, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut || r.Error == nil || r.Error.Name != "TimeoutError" {
		t.Fatalf("want a timeout, got %+v", r)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("timeout took %v", d)
	}
}

func TestTypeScript(t *testing.T) {
	t.Parallel()
	RequireNode(t, true)
	k := nodeKernel(t)

	r, err := k.Execute(t.Context(), TypeScript, `import * as path from "path";
interface Point { x: number; y: number }
const p: Point = { x: 1, y: 2 };
function norm(q: Point): number { return Math.hypot(q.x, q.y); }
console.log(path.basename("/a/b.ts"), norm(p).toFixed(3));`, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout() != "b.ts 2.236\n" || r.Error != nil {
		t.Fatalf("got %+v", r)
	}

	r, err = k.Execute(t.Context(), TypeScript, "const v: number = await Promise.resolve(7);\nconsole.log(v * 6);", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout() != "42\n" {
		t.Errorf("top-level await: %+v", r)
	}

	// The long-lived transpiler dies: the next call starts another.
	k.ts.mu.Lock()
	k.ts.p.cmd.Process.Kill()
	k.ts.mu.Unlock()
	var lastErr error
	for range 2 {
		if r, lastErr = k.Execute(t.Context(), TypeScript, `console.log("again" as string)`, 30*time.Second); lastErr == nil {
			break
		}
	}
	if lastErr != nil || r.Stdout() != "again\n" {
		t.Fatalf("after the transpiler died: %v %+v", lastErr, r)
	}

	r, err = k.Execute(t.Context(), TypeScript, "const x: number = ;", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Error == nil || r.Error.Name != "TypeScriptError" || !strings.Contains(r.Stderr(), "main.ts(1,19)") {
		t.Errorf("syntax error: %+v", r)
	}
}

func TestModuleDetection(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		`console.log(1)`:                            false,
		`const fs = require("fs")`:                  false,
		`import fs from "fs"`:                       true,
		`import { readFile } from "fs/promises"`:    true,
		`import "./side-effect.js"`:                 true,
		`const m = await import("fs")`:              true,
		`import("fs").then(console.log)`:            false,
		`export const x = 1`:                        true,
		`await fetch("x")`:                          true,
		`async function f() {\n  await g()\n}`:      false,
		`console.log(import.meta.url)`:              true,
		`// import nothing from here, just talking`: false,
	}
	for code, want := range tests {
		if got := esmSyntax.MatchString(code); got != want {
			t.Errorf("esm(%q) = %v, want %v", code, got, want)
		}
	}
}

func TestNodeErrorParsing(t *testing.T) {
	t.Parallel()
	stderr := "[stdin]:1\nnull.x\n     ^\n\nTypeError: Cannot read properties of null (reading 'x')\n    at [stdin]:1:6\n"
	e := nodeError(stderr, 1)
	if e.Name != "TypeError" || e.Value != "Cannot read properties of null (reading 'x')" {
		t.Errorf("got %+v", e)
	}
	if e := nodeError("", 2); e.Name != "ExitError" {
		t.Errorf("got %+v", e)
	}
}

func TestStripANSI(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"plain":                              "plain",
		"\x1b[0;31mZeroDivisionError\x1b[0m": "ZeroDivisionError",
		"\x1b[1;32m-> 1\x1b[39m x":           "-> 1 x",
		"\x1b]0;title\x07after":              "after",
		"keep [brackets] and ; semicolons":   "keep [brackets] and ; semicolons",
	}
	for in, want := range tests {
		if got := StripANSI(in); got != want {
			t.Errorf("StripANSI(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkJavaScript(b *testing.B) {
	RequireNode(b, false)
	k := New(Config{Dir: b.TempDir()}, nil)
	for b.Loop() {
		if _, err := k.Execute(b.Context(), JavaScript, `console.log(1)`, 30*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTypeScript(b *testing.B) {
	RequireNode(b, true)
	k := New(Config{Dir: b.TempDir()}, nil)
	b.Cleanup(func() { k.Close() })
	for b.Loop() {
		if _, err := k.Execute(b.Context(), TypeScript, `const n: number = 1; console.log(n)`, 30*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTSC measures the tsc-then-node path for comparison.
func BenchmarkTSC(b *testing.B) {
	RequireNode(b, true)
	if _, err := exec.LookPath("tsc"); err != nil {
		b.Skip("tsc is not installed")
	}
	dir := b.TempDir()
	src := filepath.Join(dir, "main.ts")
	if err := os.WriteFile(src, []byte(`const n: number = 1; console.log(n)`), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if out, err := exec.Command("tsc", "--outDir", dir, src).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		if err := exec.Command("node", filepath.Join(dir, "main.js")).Run(); err != nil {
			b.Fatal(err)
		}
	}
}
