package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/store/storetest"
)

func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func newStore(t *testing.T) drydock.Store {
	return open(t, filepath.Join(t.TempDir(), "drydock.db"))
}

func reopen(t *testing.T, s drydock.Store) drydock.Store {
	ss := s.(*sqlite.Store)
	if err := ss.Close(); err != nil {
		t.Fatalf("close before reopen: %v", err)
	}
	return open(t, ss.Path())
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, newStore, storetest.WithReopen(reopen))
}

func TestOpenRejectsNonFilePaths(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if s, err := sqlite.Open(t.Context(), p, nil); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded; want an error", p)
		}
	}
}

func TestOpenTwiceMigratesOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "drydock.db")
	for range 3 {
		s, err := sqlite.Open(t.Context(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKillDurability runs a child process that creates jobs from many
// goroutines and prints each id once CreateJob returned, SIGKILLs it in the
// middle, and checks that every printed id is in the database.
func TestKillDurability(t *testing.T) {
	if path := os.Getenv("DRYDOCK_SQLITE_KILL_CHILD"); path != "" {
		killChild(path)
		return
	}
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "drydock.db")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestKillDurability$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DRYDOCK_SQLITE_KILL_CHILD="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(acked) < 500 {
		if id, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
			acked = append(acked, id)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Ids printed between the last read and the kill are acknowledged too.
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
			acked = append(acked, id)
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("child ended without being killed: %v", err)
	}
	if len(acked) < 500 {
		t.Fatalf("child acknowledged only %d jobs before the kill", len(acked))
	}

	s := open(t, path)
	for _, id := range acked {
		if _, err := s.GetJob(t.Context(), id); err != nil {
			t.Fatalf("acknowledged job %s lost by kill -9: %v", id, err)
		}
		es, err := s.ListEvents(t.Context(), id, 0, 10)
		if err != nil || len(es) != 1 {
			t.Fatalf("acknowledged job %s: events %v, %v", id, es, err)
		}
	}
	t.Logf("%d acknowledged jobs survived SIGKILL", len(acked))
}

// killChild creates jobs until it is killed.
func killChild(path string) {
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for {
				j := &drydock.Job{ID: uuid.Must(uuid.NewV7()).String(), OwnerID: "u", JobSpec: drydock.JobSpec{Task: "t"}}
				if err := s.CreateJob(context.Background(), j); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				// Unbuffered: the line leaves the process before the next
				// job is acknowledged.
				fmt.Fprintf(os.Stdout, "acked %s\n", j.ID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	time.Sleep(time.Hour)
}

// BenchmarkCreateJobParallel measures durable creates from many concurrent
// callers (API requests), per number of goroutines.
func BenchmarkCreateJobParallel(b *testing.B) {
	for _, goroutines := range []int{8, 64, 512} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "drydock.db"))
			b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					j := &drydock.Job{ID: uuid.Must(uuid.NewV7()).String(), OwnerID: "u", JobSpec: drydock.JobSpec{Task: "bench"}}
					if err := s.CreateJob(context.Background(), j); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
			if batches, ops := s.WriterStats(); batches > 0 {
				b.ReportMetric(float64(ops)/float64(batches), "ops/commit")
			}
		})
	}
}

func BenchmarkCreateJobSerial(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "drydock.db"))
	for b.Loop() {
		j := &drydock.Job{ID: uuid.Must(uuid.NewV7()).String(), OwnerID: "u", JobSpec: drydock.JobSpec{Task: "bench"}}
		if err := s.CreateJob(context.Background(), j); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetJob(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "drydock.db"))
	ids := make([]string, 1000)
	for i := range ids {
		j := &drydock.Job{ID: uuid.Must(uuid.NewV7()).String(), OwnerID: "u", JobSpec: drydock.JobSpec{
			Task: "bench", Metadata: map[string]string{"k": "v"}}}
		if err := s.CreateJob(context.Background(), j); err != nil {
			b.Fatal(err)
		}
		ids[i] = j.ID
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := s.GetJob(context.Background(), ids[i%len(ids)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

func BenchmarkCreateJobOnce(b *testing.B) {
	storetest.BenchCreateJobOnce(b, open(b, filepath.Join(b.TempDir(), "drydock.db")))
}
