package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/postgres"
	"github.com/drydockhq/drydock/store/storetest"
)

// dsnEnv names the admin DSN of a Postgres the tests may create databases in;
// scripts/testenv/postgres-up.sh prints it.
const dsnEnv = "DRYDOCK_TEST_POSTGRES_DSN"

// requirePostgres returns the admin DSN or skips the test.
func requirePostgres(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		t.Skipf("%s is not set: run scripts/testenv/postgres-up.sh and export the variable it prints", dsnEnv)
	}
	return dsn
}

// newDatabase creates an empty database for t alone, dropped at its end, and
// returns its DSN. A database per test (not a schema) keeps everything
// apart, the migrations' advisory lock included.
func newDatabase(t testing.TB) string {
	t.Helper()
	admin := requirePostgres(t)
	b := make([]byte, 8)
	rand.Read(b)
	name := "drydock_test_" + hex.EncodeToString(b)

	ctx := context.Background() // t.Context() is over when cleanups run
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to %s: %v", dsnEnv, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("connect to drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return withDatabase(t, admin, name)
}

// withDatabase returns dsn pointing at database name.
func withDatabase(t testing.TB, dsn, name string) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("%s is not a valid URL", dsnEnv)
		}
		u.Path = "/" + name
		return u.String()
	}
	return dsn + " dbname=" + name // key=value form: the last one counts
}

// dsnOf remembers which database each open store uses, for reopen.
var dsnOf sync.Map // *postgres.Store -> string

func open(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	dsnOf.Store(s, dsn)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func newStore(t *testing.T) drydock.Store {
	return open(t, newDatabase(t))
}

func reopen(t *testing.T, s drydock.Store) drydock.Store {
	ps := s.(*postgres.Store)
	if err := ps.Close(); err != nil {
		t.Fatalf("close before reopen: %v", err)
	}
	dsn, _ := dsnOf.Load(ps)
	return open(t, dsn.(string))
}

func TestConformance(t *testing.T) {
	requirePostgres(t)
	t.Parallel()
	storetest.Run(t, newStore, storetest.WithReopen(reopen))
}

func TestOpenTwiceMigratesOnce(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	for range 3 {
		s, err := postgres.Open(t.Context(), dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var applied, max int
	if err := conn.QueryRow(t.Context(), `SELECT count(*), max(version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&applied, &max); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migration files found: %v", err)
	}
	// Versions are the files' numbers, which need not be contiguous while
	// branches that each add one are merged.
	highest := 0
	for _, f := range files {
		if n, err := strconv.Atoi(strings.SplitN(filepath.Base(f), "_", 2)[0]); err == nil && n > highest {
			highest = n
		}
	}
	if applied != len(files) || max != highest {
		t.Fatalf("goose_db_version holds %d applied migrations up to %d; want each of the %d files once, up to %d", applied, max, len(files), highest)
	}
}

// TestOpenErrorsHideThePassword checks that a bad or unreachable DSN is
// reported without its password. It needs no database.
func TestOpenErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-pw"
	for _, dsn := range []string{
		"postgres://u:" + secret + "@127.0.0.1:1/x?sslmode=disable&pool_max_conns=many",
		"postgres://u:" + secret + "@127.0.0.1:1/x?sslmode=disable&connect_timeout=2",
		"host=127.0.0.1 port=1 user=u password=" + secret + " sslmode=disable connect_timeout=2",
		"postgres://u:" + secret + "@[::1/x",
	} {
		s, err := postgres.Open(t.Context(), dsn, nil)
		if err == nil {
			s.Close()
			t.Fatalf("Open succeeded on %q", dsn)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Open error shows the password: %v", err)
		}
	}
}

// TestTextPostgresCannotHold covers what Postgres text refuses and SQLite
// takes (NUL bytes, invalid UTF-8): user input is EINVALID, lookups by such
// an id find nothing, and what a worker reports is stored with U+FFFD.
func TestTextPostgresCannotHold(t *testing.T) {
	t.Parallel()
	s := open(t, newDatabase(t))
	ctx := t.Context()

	for _, task := range []string{"nul \x00 here", "bad utf-8 \xff"} {
		j := &drydock.Job{ID: uuid.NewString(), JobSpec: drydock.JobSpec{Task: task}}
		if code := drydock.ErrorCode(s.CreateJob(ctx, j)); code != drydock.EINVALID {
			t.Errorf("CreateJob with task %q: code %q; want %q", task, code, drydock.EINVALID)
		}
	}
	j := &drydock.Job{ID: uuid.NewString(), JobSpec: drydock.JobSpec{Task: "t", Metadata: map[string]string{"k": "a\x00b"}}}
	if code := drydock.ErrorCode(s.CreateJob(ctx, j)); code != drydock.EINVALID {
		t.Errorf("CreateJob with NUL in metadata: code %q; want %q", code, drydock.EINVALID)
	}
	for _, id := range []string{"a\x00b", "\xff"} {
		if _, err := s.GetJob(ctx, id); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("GetJob(%q): %v; want ENOTFOUND", id, err)
		}
		if _, err := s.ListEvents(ctx, id, 0, 10); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("ListEvents(%q): %v; want ENOTFOUND", id, err)
		}
		if _, err := s.CancelJob(ctx, id); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("CancelJob(%q): %v; want ENOTFOUND", id, err)
		}
	}
	cursor := "ajE6AGI" // base64url of "j1:\x00b"
	if _, _, err := s.ListJobs(ctx, drydock.JobFilter{Cursor: cursor}); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Errorf("ListJobs with a NUL in the cursor: %v; want EINVALID", err)
	}

	job := &drydock.Job{ID: uuid.NewString(), JobSpec: drydock.JobSpec{Task: "t"}}
	if err := s.CreateJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimJob(ctx, "w", time.Hour); err != nil {
		t.Fatal(err)
	}
	// A tool printed a NUL: JSON spells it \u0000, which the json column keeps.
	e := drydock.NewEvent(job.ID, drydock.EventObservation, map[string]string{"output": "bin\x00ary"})
	if err := s.AppendEvent(ctx, e); err != nil {
		t.Fatalf("AppendEvent with \\u0000 in its data: %v", err)
	}
	if err := s.FinishJob(ctx, job.ID, "w", drydock.JobResult{Status: drydock.StatusError, Error: "exit\x00", Summary: "half \xff"}); err != nil {
		t.Fatalf("FinishJob with NUL and bad UTF-8: %v", err)
	}
	got, err := s.GetJob(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Error != "exit\uFFFD" || got.Summary != "half \uFFFD" || got.Status != drydock.StatusError {
		t.Errorf("finished job: error %q summary %q status %s", got.Error, got.Summary, got.Status)
	}
	es, err := s.ListEvents(ctx, job.ID, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || string(es[0].Data) != string(e.Data) {
		t.Fatalf("events = %v; want the observation back exactly, then the status", es)
	}
}

// TestEventDataKeptExactly: events.data is json, not jsonb, so the text a
// worker wrote comes back byte for byte, as from SQLite.
func TestEventDataKeptExactly(t *testing.T) {
	t.Parallel()
	s := open(t, newDatabase(t))
	job := &drydock.Job{ID: uuid.NewString(), JobSpec: drydock.JobSpec{Task: "t"}}
	if err := s.CreateJob(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	data := `{"z": 1,  "a": [true, null], "z": 2}`
	if err := s.AppendEvent(t.Context(), &drydock.Event{JobID: job.ID, Type: drydock.EventLog, Data: json.RawMessage(data)}); err != nil {
		t.Fatal(err)
	}
	es, err := s.ListEvents(t.Context(), job.ID, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || string(es[0].Data) != data {
		t.Fatalf("event data = %q; want %q", es[0].Data, data)
	}
}

// BenchmarkCreateJobParallel measures durable creates from many concurrent
// callers (API requests), per number of goroutines, on the default pool.
func BenchmarkCreateJobParallel(b *testing.B) {
	for _, goroutines := range []int{8, 64, 512} {
		s := open(b, newDatabase(b))
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
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
		})
	}
}

// BenchmarkCreateJobPoolSize measures 256 concurrent creators against pools
// of several sizes: what the default pool size is chosen from.
func BenchmarkCreateJobPoolSize(b *testing.B) {
	for _, conns := range []int{4, 16, 64} {
		dsn := newDatabase(b)
		if !strings.Contains(dsn, "://") {
			b.Skip("needs a URL DSN")
		}
		s := open(b, dsn+"&pool_max_conns="+fmt.Sprint(conns))
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			b.SetParallelism(256 / runtime.GOMAXPROCS(0))
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
		})
	}
}

func BenchmarkCreateJobSerial(b *testing.B) {
	s := open(b, newDatabase(b))
	for b.Loop() {
		j := &drydock.Job{ID: uuid.Must(uuid.NewV7()).String(), OwnerID: "u", JobSpec: drydock.JobSpec{Task: "bench"}}
		if err := s.CreateJob(context.Background(), j); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimJobParallel measures claims by 16 concurrent workers from a
// backlog of b.N pending jobs.
func BenchmarkClaimJobParallel(b *testing.B) {
	s := open(b, newDatabase(b))
	b.StopTimer()
	createBacklog(b, s, b.N)
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
	b.StartTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		owner := uuid.NewString()
		for pb.Next() {
			j, err := s.ClaimJob(context.Background(), owner, time.Hour)
			if err != nil || j == nil {
				b.Errorf("ClaimJob = %v, %v", j, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "claims/s")
}

func BenchmarkGetJob(b *testing.B) {
	s := open(b, newDatabase(b))
	ids := createBacklog(b, s, 1000)
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

// createBacklog creates n pending jobs from 32 goroutines.
func createBacklog(tb testing.TB, s drydock.Store, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7()).String()
	}
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for i := w; i < n; i += 32 {
				j := &drydock.Job{ID: ids[i], OwnerID: "u", JobSpec: drydock.JobSpec{Task: "bench", Metadata: map[string]string{"k": "v"}}}
				if err := s.CreateJob(context.Background(), j); err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
	return ids
}

func BenchmarkCreateJobOnce(b *testing.B) {
	storetest.BenchCreateJobOnce(b, open(b, newDatabase(b)))
}
