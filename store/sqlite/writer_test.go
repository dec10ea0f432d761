package sqlite_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/drydockhq/drydock"
)

// TestGroupCommitIsolatesFailures sends failing and succeeding writes at the
// same time, so that they share transactions: each caller must get its own
// outcome, and the failures must not undo the others.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "drydock.db"))
	taken := &drydock.Job{ID: uuid.Must(uuid.NewV7()).String(), JobSpec: drydock.JobSpec{Task: "t"}}
	if err := s.CreateJob(t.Context(), taken); err != nil {
		t.Fatal(err)
	}
	const n = 300
	var (
		wg      sync.WaitGroup
		created = make([]*drydock.Job, n)
		errs    = make([]error, n)
		start   = make(chan struct{})
	)
	for i := range n {
		wg.Go(func() {
			<-start
			switch i % 3 {
			case 0: // succeeds
				j := &drydock.Job{ID: uuid.Must(uuid.NewV7()).String(), JobSpec: drydock.JobSpec{Task: "t"}}
				errs[i] = s.CreateJob(t.Context(), j)
				created[i] = j
			case 1: // ECONFLICT, after its INSERT ran inside the batch
				errs[i] = s.CreateJob(t.Context(), &drydock.Job{ID: taken.ID, JobSpec: drydock.JobSpec{Task: "dup"}})
			case 2: // ENOTFOUND from inside the batch
				errs[i] = s.AppendEvent(t.Context(), drydock.NewEvent(uuid.Must(uuid.NewV7()).String(), drydock.EventLog, "x"))
			}
		})
	}
	close(start)
	wg.Wait()

	want := []string{"", drydock.ECONFLICT, drydock.ENOTFOUND}
	for i, err := range errs {
		if got := drydock.ErrorCode(err); got != want[i%3] {
			t.Fatalf("op %d: error %v; want code %q", i, err, want[i%3])
		}
		if j := created[i]; j != nil {
			if _, err := s.GetJob(t.Context(), j.ID); err != nil {
				t.Fatalf("job %s acknowledged but missing: %v", j.ID, err)
			}
		}
	}
	if es, err := s.ListEvents(t.Context(), taken.ID, 0, 10); err != nil || len(es) != 1 {
		t.Fatalf("the taken job's events: %v, %v; want only its first", es, err)
	}
	batches, ops := s.WriterStats()
	t.Logf("%d writes in %d transactions", ops, batches)
	if batches >= ops {
		t.Fatalf("%d writes took %d transactions: no group commit happened", ops, batches)
	}
}

// TestPragmas checks the settings the durability and concurrency claims of
// the package rest on.
func TestPragmas(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "drydock.db"))
	for _, tt := range []struct {
		reader     bool
		name, want string
	}{
		{false, "journal_mode", "wal"},
		{false, "synchronous", "2"}, // FULL
		{false, "foreign_keys", "1"},
		{false, "busy_timeout", "10000"},
		{true, "journal_mode", "wal"},
		{true, "query_only", "1"},
		{true, "busy_timeout", "10000"},
	} {
		get := s.WriterPragma
		if tt.reader {
			get = s.ReaderPragma
		}
		got, err := get(t.Context(), tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("PRAGMA %s (reader %v) = %q; want %q", tt.name, tt.reader, got, tt.want)
		}
	}
}

func TestFilesPrivate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "drydock.db")
	s := open(t, path)
	if err := s.CreateJob(t.Context(), &drydock.Job{ID: "j1", JobSpec: drydock.JobSpec{Task: "t"}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode&0o077 != 0 {
			t.Errorf("%s has mode %v; want no access for group and others", filepath.Base(p), mode)
		}
	}
}
