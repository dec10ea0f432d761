package client_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/client"
	"github.com/drydockhq/drydock/client/clienttest"
	"github.com/drydockhq/drydock/secretbox"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/watch"
)

// apiServer is a server the client's behaviour tests run against, with
// the means to put its jobs in the states a test reads. The fake
// (clienttest) sets them directly; the real server's are written to its
// store and artifact store as the runner would write them, so that what
// the client reads is what the real API answers. A behaviour test runs
// against both (forEachServer): where they disagree, the real server is
// right and the fake is fixed.
type apiServer interface {
	URL() string
	// Token is the bearer token the server accepts.
	Token() string
	// AddJob stores a pending job of the token's owner created at created.
	AddJob(t *testing.T, spec drydock.JobSpec, created time.Time) *drydock.Job
	// SetStatus moves a job to status, recording the transition's event.
	// On the real server a pending job starts by the runner's claim, which
	// takes the oldest pending job: start jobs in the order they were made.
	SetStatus(t *testing.T, id string, status drydock.JobStatus, errMsg string)
	// SetProgress records a running job's steps and usage.
	SetProgress(t *testing.T, id string, steps int, usage drydock.Usage)
	// Emit appends an event to a job's log.
	Emit(t *testing.T, id string, typ drydock.EventType, data any)
	// SetArchive stores a job's archived workspace holding files.
	SetArchive(t *testing.T, id string, files map[string]string)
	// SetDiff stores the diff of an archived job's workspace.
	SetDiff(t *testing.T, id string, patch []byte)
	// SetWaitingFor shows the question a running job's agent waits on.
	SetWaitingFor(t *testing.T, id, question string)
	// Job is the job as the server holds it, secrets included.
	Job(t *testing.T, id string) *drydock.Job
}

// servers are the servers every behaviour test runs against.
var servers = []struct {
	name  string
	start func(t *testing.T) apiServer
}{
	{"fake", startFake},
	{"real", startReal},
}

// forEachServer runs test as a parallel subtest against each server, with
// a client holding the server's token.
func forEachServer(t *testing.T, test func(t *testing.T, srv apiServer, c *client.Client)) {
	t.Helper()
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			srv := s.start(t)
			test(t, srv, client.New(srv.URL(), srv.Token()))
		})
	}
}

// fakeAPI is clienttest's fake.
type fakeAPI struct{ *clienttest.Server }

const fakeToken = "ddk_test"

func startFake(t *testing.T) apiServer {
	srv := clienttest.NewServer()
	t.Cleanup(srv.Close)
	srv.RequireToken(fakeToken)
	return fakeAPI{srv}
}

func (f fakeAPI) URL() string   { return f.Server.URL }
func (f fakeAPI) Token() string { return fakeToken }
func (f fakeAPI) AddJob(_ *testing.T, spec drydock.JobSpec, created time.Time) *drydock.Job {
	return f.Server.AddJob(spec, created)
}
func (f fakeAPI) SetStatus(_ *testing.T, id string, status drydock.JobStatus, errMsg string) {
	f.Server.SetStatus(id, status, errMsg)
}
func (f fakeAPI) SetProgress(_ *testing.T, id string, steps int, usage drydock.Usage) {
	f.Server.SetProgress(id, steps, usage, "")
}
func (f fakeAPI) Emit(_ *testing.T, id string, typ drydock.EventType, data any) {
	f.Server.Emit(id, typ, data)
}
func (f fakeAPI) SetArchive(t *testing.T, id string, files map[string]string) {
	f.Server.SetArtifact(id, "tar.gz", tarGz(t, files))
	f.Server.SetArtifact(id, "zip", zipOf(t, files))
}
func (f fakeAPI) SetWaitingFor(_ *testing.T, id, q string)      { f.Server.SetWaitingFor(id, q) }
func (f fakeAPI) SetDiff(_ *testing.T, id string, patch []byte) { f.Server.SetDiff(id, patch) }
func (f fakeAPI) Job(_ *testing.T, id string) *drydock.Job      { return f.Server.Job(id) }

// realAPI is package api's server on SQLite and a local artifact
// directory, both in the test's temporary directory. No runner runs: the
// harness plays its part in the store (claims, progress, events, the
// archive and the end), so a test decides every state.
type realAPI struct {
	url, token string
	store      *watch.Store
	artifacts  *local.Store
	box        *secretbox.Box
}

// realOwner is the lease owner the harness claims jobs as, and realTokenID
// the id of the token the tests use (the owner of their jobs).
const (
	realOwner   = "clienttest-runner"
	realTokenID = "tok_client"
)

func startReal(t *testing.T) apiServer {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := local.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.New(secretbox.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	secret, hash := drydock.NewTokenSecret()
	if err := st.CreateToken(t.Context(), &drydock.Token{ID: realTokenID, Name: "client", CreatedAt: time.Now(), Hash: hash}); err != nil {
		t.Fatal(err)
	}
	ws := watch.Wrap(st)
	srv := api.New(api.Config{DevMode: true, Secrets: box, SSEPoll: 50 * time.Millisecond}, ws, noQueue{}, arts, prometheus.NewRegistry(), nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &realAPI{url: hs.URL, token: secret, store: ws, artifacts: arts, box: box}
}

func (r *realAPI) URL() string   { return r.url }
func (r *realAPI) Token() string { return r.token }

func (r *realAPI) AddJob(t *testing.T, spec drydock.JobSpec, created time.Time) *drydock.Job {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	if spec.Profile == "" {
		spec.Profile = drydock.ProfileHeadless
	}
	j := &drydock.Job{ID: id.String(), OwnerID: realTokenID, CreatedAt: created.UTC().Truncate(time.Microsecond), JobSpec: spec}
	if err := r.store.CreateJob(t.Context(), j); err != nil {
		t.Fatalf("create job: %v", err)
	}
	return r.Job(t, j.ID)
}

func (r *realAPI) SetStatus(t *testing.T, id string, status drydock.JobStatus, errMsg string) {
	t.Helper()
	ctx := t.Context()
	j := r.Job(t, id)
	if status == drydock.StatusPending && j.Status != drydock.StatusPending {
		t.Fatalf("job %s is %s: a job never goes back to pending", id, j.Status)
	}
	if j.Status == drydock.StatusPending {
		if status == drydock.StatusCancelled {
			if _, err := r.store.CancelJob(ctx, id); err != nil {
				t.Fatalf("cancel %s: %v", id, err)
			}
			return
		}
		claimed, err := r.store.ClaimJob(ctx, realOwner, time.Hour)
		if err != nil || claimed == nil || claimed.ID != id {
			t.Fatalf("claim %s: got %v, %v; the runner claims the oldest pending job, so start jobs in the order they were made", id, claimed, err)
		}
		if err := r.store.AppendEvent(ctx, drydock.NewEvent(id, drydock.EventStatus, map[string]any{"status": drydock.StatusRunning})); err != nil {
			t.Fatal(err)
		}
	}
	if status.Terminal() {
		if err := r.store.FinishJob(ctx, id, realOwner, drydock.JobResult{Status: status, Error: errMsg}); err != nil {
			t.Fatalf("finish %s: %v", id, err)
		}
	}
}

func (r *realAPI) SetProgress(t *testing.T, id string, steps int, usage drydock.Usage) {
	t.Helper()
	if err := r.store.UpdateProgress(t.Context(), id, realOwner, drydock.JobProgress{Steps: steps, Usage: usage}); err != nil {
		t.Fatalf("progress of %s: %v", id, err)
	}
}

func (r *realAPI) Emit(t *testing.T, id string, typ drydock.EventType, data any) {
	t.Helper()
	if err := r.store.AppendEvent(t.Context(), drydock.NewEvent(id, typ, data)); err != nil {
		t.Fatalf("append event to %s: %v", id, err)
	}
}

func (r *realAPI) SetArchive(t *testing.T, id string, files map[string]string) {
	t.Helper()
	key := id + ".tar.gz"
	n, err := r.artifacts.Put(t.Context(), key, bytes.NewReader(tarGz(t, files)))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.store.SetArtifact(t.Context(), id, key, n); err != nil {
		t.Fatal(err)
	}
}

func (r *realAPI) SetDiff(t *testing.T, id string, patch []byte) {
	t.Helper()
	if _, err := r.artifacts.Put(t.Context(), drydock.DiffArtifactKey(id), bytes.NewReader(patch)); err != nil {
		t.Fatal(err)
	}
}

func (r *realAPI) SetWaitingFor(t *testing.T, id, question string) {
	t.Helper()
	if err := r.store.SetWaitingFor(t.Context(), id, realOwner, question); err != nil {
		t.Fatalf("waiting for of %s: %v", id, err)
	}
}

func (r *realAPI) Job(t *testing.T, id string) *drydock.Job {
	t.Helper()
	j, err := r.store.GetJob(t.Context(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	if len(j.SealedSecrets) > 0 {
		if j.Secrets, err = r.box.Open(id, j.SealedSecrets); err != nil {
			t.Fatalf("open the secrets of %s: %v", id, err)
		}
		j.SecretNames = j.Secrets.Names()
	}
	return j
}

// tarGz is a workspace archive as the runner stores it: a gzipped tar of
// files, in name order.
func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range sortedKeys(files) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg, ModTime: time.Unix(1_700_000_000, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zipOf is the zip archive of files, as artifact.zip serves a workspace.
func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range sortedKeys(files) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(files[name]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// unzip reads the regular files of a zip archive.
func unzip(t *testing.T, data []byte) map[string]string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("not a zip archive: %v", err)
	}
	out := map[string]string{}
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(rc)
		rc.Close()
		out[f.Name] = b.String()
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
