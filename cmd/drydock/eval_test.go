package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

type evalCLI struct {
	Globals
	Eval EvalCmd `cmd:""`
}

// drydock eval refuses what it cannot run before it schedules anything, and
// says what is wrong: the flags, the suite, a task the suite lacks.
func TestEvalRefusesBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite")
	os.MkdirAll(filepath.Join(suite, "hello"), 0o755)
	os.WriteFile(filepath.Join(suite, "hello", "task.json"), []byte(`{"task": "say hello", "check": "true"}`), 0o644)
	os.MkdirAll(filepath.Join(dir, "bad", "t"), 0o755)
	os.WriteFile(filepath.Join(dir, "bad", "t", "task.json"), []byte(`{"task": "x"}`), 0o644)
	run := func(args ...string) error {
		t.Helper()
		var c evalCLI
		var out, errw syncBuffer
		c.Out, c.Err = &out, &errw
		parser, err := kong.New(&c, kong.Name("drydock"), kong.Exit(func(int) { t.Fatalf("kong exited on %q", args) }))
		if err != nil {
			t.Fatal(err)
		}
		// No server listens there: each refusal must come before any call.
		ctx, err := parser.Parse(append([]string{"--url", "http://127.0.0.1:1"}, args...))
		if err != nil {
			return err
		}
		return ctx.Run(&c.Globals)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"eval", suite, "--runs", "0"}, "--runs 0: give 1 to 100"},
		{[]string{"eval", suite, "--concurrency", "0"}, "--concurrency 0: give 1 to 32"},
		{[]string{"eval", suite, "--run-id", "../x"}, `--run-id: run id "../x"`},
		{[]string{"eval", filepath.Join(dir, "nope")}, "no such file"},
		{[]string{"eval", filepath.Join(dir, "bad")}, `"check" is required`},
		{[]string{"eval", suite, "--task", "bye"}, `has no task "bye"; its tasks: hello`},
		// All is well but the server: one error saying so, nothing scheduled.
		{[]string{"eval", suite}, "reach the server"},
	}
	for _, c := range cases {
		if err := run(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want an error containing %q", c.args, err, c.want)
		}
	}
}
