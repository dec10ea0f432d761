package e2e_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// The CLI's held sandbox, end to end against a real server on the local
// runtime: schedule --agent none --wait, put a file, exec commands in the
// persistent shell (the exit status is drydock's), cancel, and the archived
// workspace holds the file.
func TestCLIHeldSandbox(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.start()

	// --wait returns once the sandbox is ready, not at the end of the hold.
	out, stderr, err := s.cli("schedule", "--agent", "none", "--timeout", "10m", "--wait")
	if err != nil {
		t.Fatalf("schedule --agent none --wait: %v\n%s", err, stderr)
	}
	id := strings.TrimSpace(out)
	if !strings.Contains(stderr, "The sandbox is ready") || !strings.Contains(stderr, "drydock exec "+id+" -- COMMAND") {
		t.Errorf("schedule's footer does not say how to use the sandbox: %q", stderr)
	}
	if st := s.status(id).Status; st != drydock.StatusRunning {
		t.Fatalf("the held sandbox is %s after schedule --wait", st)
	}

	src := filepath.Join(t.TempDir(), "main.py")
	if err := os.WriteFile(src, []byte("print(6 * 7)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := s.cli("put", id, "app/main.py", src); err != nil || !strings.Contains(out, "Wrote app/main.py (13 bytes)") {
		t.Fatalf("put: %v %q %q", err, out, stderr)
	}
	if out, stderr, err := s.cli("exec", id, "--", "cd", "app", "&&", "python3", "main.py"); err != nil || out != "42\n" {
		t.Fatalf("exec: %v %q %q", err, out, stderr)
	}
	// The shell persists, and the command's status is drydock's.
	out, _, err = s.cli("exec", id, "--", "basename $PWD; (exit 3)")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || out != "app\n" {
		t.Errorf("exec of a failing command: %v %q; want output app and exit status 3", err, out)
	}

	if _, stderr, err := s.cli("cancel", id); err != nil {
		t.Fatalf("cancel: %v %s", err, stderr)
	}
	if j, _ := s.waitTerminal(id, 30*time.Second); j.Status != drydock.StatusCancelled {
		t.Fatalf("after cancel: %s", j.Status)
	}
	if _, stderr, err := s.cli("exec", id, "--", "true"); err == nil || !strings.Contains(stderr, "conflict") {
		t.Errorf("exec in a finished job: %v %q; want a conflict", err, stderr)
	}
}
