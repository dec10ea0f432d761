package e2e_test

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// cli runs the drydock binary as a client of s.
func (s *server) cli(args ...string) (string, string, error) {
	s.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "DRYDOCK_URL="+s.url(), "DRYDOCK_TOKEN=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func TestCLIAgainstRealServer(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.start()

	out, stderr, err := s.cli("schedule", "write notes [fake:steps=2] [fake:delay=50ms]", "--wait", "--json")
	if err != nil {
		t.Fatalf("schedule --wait: %v\n%s%s", err, out, stderr)
	}
	var j drydock.Job
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("schedule --wait --json printed %q: %v", out, err)
	}
	if j.Status != drydock.StatusComplete || j.Steps != 2 {
		t.Fatalf("job: %+v", j)
	}

	out, _, err = s.cli("status", j.ID)
	if err != nil || !strings.Contains(out, "complete") {
		t.Errorf("status: %v %q", err, out)
	}
	out, _, err = s.cli("logs", j.ID)
	if err != nil || !strings.Contains(out, "str_replace_based_edit_tool") {
		t.Errorf("logs: %v %q", err, out)
	}
	out, _, err = s.cli("jobs")
	if err != nil || !strings.Contains(out, j.ID) {
		t.Errorf("jobs: %v %q", err, out)
	}

	dst := filepath.Join(t.TempDir(), "ws.zip")
	if _, stderr, err := s.cli("download", j.ID, "-o", dst); err != nil {
		t.Fatalf("download: %v %s", err, stderr)
	}
	zr, err := zip.OpenReader(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	found := false
	for _, f := range zr.File {
		found = found || f.Name == "SUMMARY.md"
	}
	if !found {
		t.Error("downloaded zip lacks SUMMARY.md")
	}
	if _, _, err := s.cli("download", j.ID, "-o", dst); err == nil {
		t.Error("download overwrote an existing file without --force")
	}

	// --follow streams progress and ends with the final state.
	out, stderr, err = s.cli("schedule", "follow me [fake:steps=2] [fake:delay=50ms]", "--follow")
	if err != nil || !strings.Contains(out+stderr, "complete") || !strings.Contains(out+stderr, "str_replace_based_edit_tool") {
		t.Errorf("schedule --follow: %v\n%s\n%s", err, out, stderr)
	}

	// A failed job makes --wait exit non-zero.
	if out, _, err := s.cli("schedule", "x [fake:steps=0] [fake:fail=nope]", "--wait"); err == nil {
		t.Errorf("--wait on a failing job exited 0: %s", out)
	}

	// Cancel through the CLI.
	out, _, err = s.cli("schedule", "x [fake:hang]", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var h drydock.Job
	json.Unmarshal([]byte(out), &h)
	if out, stderr, err := s.cli("cancel", h.ID); err != nil {
		t.Fatalf("cancel: %v %s %s", err, out, stderr)
	}
	if got, _ := s.waitTerminal(h.ID, 20e9); got.Status != drydock.StatusCancelled {
		t.Errorf("cancelled job is %s", got.Status)
	}

	// Errors name the fix.
	cmd := exec.Command(binary, "jobs")
	cmd.Env = append(os.Environ(), "DRYDOCK_URL=http://127.0.0.1:1", "DRYDOCK_TOKEN=")
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "DRYDOCK_URL") {
		t.Errorf("unreachable server: %v %s", err, b)
	}
	if _, stderr, err := s.cli("status", "0193b0c4-1111-7000-8000-000000000000"); err == nil || !strings.Contains(stderr, "not found") {
		t.Errorf("unknown job: %v %s", err, stderr)
	}
}
