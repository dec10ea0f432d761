package runner_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runner"
	"github.com/drydockhq/drydock/toolbox"
)

// seeingAgent reads files of the workspace when its run starts, before
// any step, and then runs the inner agent.
type seeingAgent struct {
	inner drydock.Agent
	paths []string
	mu    sync.Mutex
	saw   map[string]string // path -> contents, or "missing"
}

func (a *seeingAgent) Run(ctx context.Context, run *drydock.AgentRun) (*drydock.AgentOutcome, error) {
	c := toolbox.New(run.Sandbox.Endpoint, run.Sandbox.Token)
	defer c.Close()
	a.mu.Lock()
	a.saw = map[string]string{}
	for _, p := range a.paths {
		data, err := c.ReadFile(ctx, p)
		if err != nil {
			a.saw[p] = "missing"
		} else {
			a.saw[p] = string(data)
		}
	}
	a.mu.Unlock()
	return a.inner.Run(ctx, run)
}

func (a *seeingAgent) seen() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.saw
}

// putInput stores a tar.gz of files as a job's input, as the API does.
func (b *bundle) putInput(t *testing.T, id string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	tw.Close()
	zw.Close()
	key := id + ".input.tar.gz"
	if _, err := b.deps.Artifacts.Put(t.Context(), key, &buf); err != nil {
		t.Fatal(err)
	}
	return key
}

func (b *bundle) createWithInput(t *testing.T, task, key string) string {
	t.Helper()
	id := strings.TrimSuffix(key, ".input.tar.gz")
	if err := b.store.CreateJob(t.Context(), &drydock.Job{ID: id, Status: drydock.StatusPending, CreatedAt: time.Now(), OwnerID: "local",
		JobSpec: drydock.JobSpec{Task: task, Profile: drydock.ProfileHeadless}, InputKey: key, InputSize: 1}); err != nil {
		t.Fatal(err)
	}
	return id
}

// archived reads one file of a finished job's archive.
func (b *bundle) archived(t *testing.T, j *drydock.Job, name string) (string, bool) {
	t.Helper()
	rc, err := b.deps.Artifacts.Get(t.Context(), j.ArtifactKey)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return "", false
		}
		if strings.TrimPrefix(h.Name, "./") == name {
			data, _ := io.ReadAll(tr)
			return string(data), true
		}
	}
}

func TestUploadedWorkspaceIsThereBeforeTheAgentStarts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ag := &seeingAgent{inner: b.agent, paths: []string{"src/main.go", "README.md"}}
	b.deps.Agent = ag
	id := newID(t)
	key := b.putInput(t, id, map[string]string{"src/main.go": "package main\n", "README.md": "# project\n"})
	b.createWithInput(t, "x [fake:steps=1]", key)
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusComplete {
		t.Fatalf("job: %s %q", j.Status, j.Error)
	}
	if saw := ag.seen(); saw["src/main.go"] != "package main\n" || saw["README.md"] != "# project\n" {
		t.Errorf("the agent's first look at the workspace: %q", saw)
	}
	if got, ok := b.archived(t, j, "src/main.go"); !ok || got != "package main\n" {
		t.Errorf("archive's src/main.go = %q, %v", got, ok)
	}
	events, err := b.store.ListEvents(t.Context(), id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var seeded bool
	for _, e := range events {
		seeded = seeded || (e.Type == drydock.EventLog && strings.Contains(string(e.Data), `"seed":"upload"`) && strings.Contains(string(e.Data), "2 files"))
	}
	if !seeded {
		t.Errorf("no seed event in the log")
	}
	// The input goes once the job has ended: its workspace is archived.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		rc, err := b.deps.Artifacts.Get(t.Context(), key)
		if drydock.ErrorCode(err) == drydock.ENOTFOUND {
			break
		}
		if err == nil {
			rc.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the finished job's input %s is still stored (%v)", key, err)
		}
	}
}

// A recovered job whose log records the seeding keeps the agent's changes
// (the upload is not unpacked again); one whose server stopped before the
// record is seeded.
func TestRecoveredJobIsNotSeededTwice(t *testing.T) {
	t.Parallel()
	for _, recorded := range []bool{true, false} {
		t.Run(map[bool]string{true: "seeded", false: "not yet seeded"}[recorded], func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ag := &seeingAgent{inner: b.agent, paths: []string{"main.go", "gone.txt"}}
			b.deps.Agent = ag
			id := newID(t)
			key := b.putInput(t, id, map[string]string{"main.go": "as uploaded\n", "gone.txt": "deleted by the agent\n"})
			b.createWithInput(t, "x [fake:steps=1]", key)
			if _, err := b.store.ClaimJob(t.Context(), "n:dead", time.Hour); err != nil {
				t.Fatal(err)
			}
			sb, err := b.runtime.Create(t.Context(), drydock.SandboxSpec{JobID: id, Labels: map[string]string{drydock.LabelServer: "n", drydock.LabelJob: id}})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.store.UpdateProgress(t.Context(), id, "n:dead", drydock.JobProgress{SandboxID: &sb.ID}); err != nil {
				t.Fatal(err)
			}
			// What the dead server's agent did after the seeding.
			c := toolbox.New(sb.Endpoint, sb.Token)
			defer c.Close()
			if err := c.WriteFile(t.Context(), "main.go", []byte("changed by the agent\n")); err != nil {
				t.Fatal(err)
			}
			if recorded {
				if err := b.store.AppendEvent(t.Context(), drydock.NewEvent(id, drydock.EventLog, map[string]any{"seed": "upload", "message": "workspace seeded"})); err != nil {
					t.Fatal(err)
				}
			}
			b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
			j := waitTerminal(t, b.store, id)
			if j.Status != drydock.StatusComplete {
				t.Fatalf("job: %s %q", j.Status, j.Error)
			}
			want := map[string]string{"main.go": "changed by the agent\n", "gone.txt": "missing"}
			if !recorded {
				want = map[string]string{"main.go": "as uploaded\n", "gone.txt": "deleted by the agent\n"}
			}
			if saw := ag.seen(); saw["main.go"] != want["main.go"] || saw["gone.txt"] != want["gone.txt"] {
				t.Errorf("the recovered agent saw %q; want %q", saw, want)
			}
		})
	}
}

func TestMissingUploadFailsTheJobWithTheReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := newID(t)
	b.createWithInput(t, "x [fake:steps=1]", id+".input.tar.gz")
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusError || !strings.Contains(j.Error, "uploaded workspace") || !strings.Contains(j.Error, "no longer in the artifact store") {
		t.Fatalf("job: %s %q; want an error naming the missing upload", j.Status, j.Error)
	}
	if b.agent.starts.Load() != 0 {
		t.Errorf("the agent ran without its workspace")
	}
}

// A warm sandbox is seeded like a cold one.
func TestUploadedWorkspaceOnAWarmSandbox(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPool(t, b, 1)
	b.deps.Pool = p
	ag := &seeingAgent{inner: b.agent, paths: []string{"app/index.js"}}
	b.deps.Agent = ag
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	deadline := time.Now().Add(20 * time.Second)
	for p.Idle(drydock.ProfileHeadless) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the pool did not fill")
		}
		time.Sleep(10 * time.Millisecond)
	}
	warm := warmIDs(t, b, p)
	id := newID(t)
	b.createWithInput(t, "x [fake:steps=1]", b.putInput(t, id, map[string]string{"app/index.js": "console.log(1)\n"}))
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusComplete || len(warm) != 1 || j.SandboxID != warm[0] {
		t.Fatalf("job: %s %q in sandbox %s; want complete in the warm one %v", j.Status, j.Error, j.SandboxID, warm)
	}
	if saw := ag.seen(); saw["app/index.js"] != "console.log(1)\n" {
		t.Errorf("the agent on a warm sandbox saw %q", saw)
	}
}
