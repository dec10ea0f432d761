package client_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// A lost answer to an upload is retried with the archive sent again (a
// fresh pack for each attempt) under the same key, and gives one job.
func TestScheduleWithWorkspaceRetriesWithTheArchive(t *testing.T) {
	t.Parallel()
	c, st, g := realServer(t, loseAnswer, refuse)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"main.go": "package main\n", ".gitignore": "bin/\n", "bin/app": "x"})
	var opens atomic.Int32
	pack := client.WorkspaceDir(dir, client.PackOptions{})
	open := func() (io.ReadCloser, error) { opens.Add(1); return pack() }
	j, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "fix it"}, client.WithWorkspace(open))
	if err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	js := storedJobs(t, st)
	if len(js) != 1 || js[0].ID != j.ID || js[0].InputKey == "" || j.InputSize == 0 {
		t.Fatalf("stored %d jobs (%+v); Schedule returned %s with input_size %d: want one job with its input", len(js), js, j.ID, j.InputSize)
	}
	if n := opens.Load(); n != 3 || len(g.sentKeys()) != 3 {
		t.Errorf("the archive was opened %d times for %d requests; want 3 and 3", n, len(g.sentKeys()))
	}
}

// A workspace that cannot be read is the caller's error, not a lost
// answer: it is not retried, and nothing is created.
func TestScheduleWithABrokenWorkspaceIsNotRetried(t *testing.T) {
	t.Parallel()
	c, st, g := realServer(t)
	open := func() (io.ReadCloser, error) {
		return io.NopCloser(io.MultiReader(strings.NewReader("\x1f\x8b partial"), errReader{errors.New("disk on fire")})), nil
	}
	_, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "x"}, client.WithWorkspace(open))
	var se *client.ScheduleError
	if err == nil || errors.As(err, &se) || !strings.Contains(err.Error(), "disk on fire") || !strings.Contains(err.Error(), "read the workspace") {
		t.Fatalf("Schedule = %v; want the read error, not a ScheduleError", err)
	}
	if n := len(g.sentKeys()); n > 1 {
		t.Errorf("%d requests; want at most 1", n)
	}
	if js := storedJobs(t, st); len(js) != 0 {
		t.Errorf("stored %d jobs", len(js))
	}

	_, err = c.Schedule(t.Context(), drydock.JobSpec{Task: "x"}, client.WithWorkspace(client.WorkspaceFile(filepath.Join(t.TempDir(), "missing.tar"))))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing archive: %v", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// A job created with a workspace carries it (input_size) on either server;
// an archive that is not one is refused and creates nothing.
func TestScheduleWithWorkspace(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"main.go": "package main\n", "README.md": "# hi\n"})
		j, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "fix it"}, client.WithWorkspace(client.WorkspaceDir(dir, client.PackOptions{})))
		if err != nil {
			t.Fatalf("Schedule: %v", err)
		}
		if j.Task != "fix it" || j.InputSize == 0 || j.Status != drydock.StatusPending {
			t.Errorf("job %+v; want the task, pending, with its input's size", j)
		}
		got, err := c.Job(t.Context(), j.ID)
		if err != nil || got.InputSize != j.InputSize {
			t.Errorf("Job: %+v, %v; want input_size %d", got, err, j.InputSize)
		}

		bad := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("not an archive")), nil }
		if _, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "x"}, client.WithWorkspace(bad)); drydock.ErrorCode(err) != drydock.EUNSUPPORTEDMEDIA {
			t.Errorf("a workspace that is no archive: %v, want unsupported_media_type", err)
		}
		if p, err := c.Jobs(t.Context(), client.ListOptions{}); err != nil || len(p.Jobs) != 1 {
			t.Errorf("jobs %v, %v; want only the first", p, err)
		}
	})
}
