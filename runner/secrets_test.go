package runner_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runner"
	"github.com/drydockhq/drydock/secretbox"
	"github.com/drydockhq/drydock/toolbox"
)

const canary = "runner-canary-3e9a1f7c"

// diffFile is where everything puts the stored diff among the archive's
// files.
const diffFile = "(stored diff)"

func newBox(t *testing.T) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(secretbox.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// leakyAgent does what a careless agent would: it prints the secret in the
// sandbox, writes it to files (and a file name), reports it in an event and
// in its summary or error.
type leakyAgent struct {
	fail bool
	mu   sync.Mutex
	saw  string // what the sandbox's shell printed
}

func (a *leakyAgent) Run(ctx context.Context, run *drydock.AgentRun) (*drydock.AgentOutcome, error) {
	c := toolbox.New(run.Sandbox.Endpoint, run.Sandbox.Token)
	defer c.Close()
	var out bytes.Buffer
	script := `test "$CANARY" = "` + canary + `" && echo secret-ok; env > env.txt; printf '%s\n' "$CANARY" > "leak-$CANARY.txt"`
	if _, err := c.Exec(ctx, toolbox.ExecRequest{Command: script}, &out, &out); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.saw = out.String()
	a.mu.Unlock()
	run.Events.Emit(ctx, drydock.EventLog, map[string]any{"message": "the token is " + canary})
	if a.fail {
		return nil, drydock.Errorf(drydock.EINVALID, "failed with %s in the message", canary)
	}
	return &drydock.AgentOutcome{Summary: "done; it was " + canary}, nil
}

// createSealed stores a job with secrets sealed by box, as the API does.
func (b *bundle) createSealed(t *testing.T, box *secretbox.Box, secrets drydock.SecretValues) string {
	t.Helper()
	id := newID(t)
	sealed, err := box.Seal(id, secrets)
	if err != nil {
		t.Fatal(err)
	}
	j := &drydock.Job{ID: id, CreatedAt: time.Now(), OwnerID: "local", SecretNames: secrets.Names(), SealedSecrets: sealed,
		JobSpec: drydock.JobSpec{Task: "leak it", Profile: drydock.ProfileHeadless}}
	if err := b.store.CreateJob(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	return id
}

// everything returns the job's events, error and summary, and its archive
// decompressed, as one text to search.
func (b *bundle) everything(t *testing.T, j *drydock.Job) (string, map[string]string) {
	t.Helper()
	var all strings.Builder
	all.WriteString(j.Error + "\n" + j.Summary + "\n")
	es, err := b.store.ListEvents(t.Context(), j.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		all.Write(e.Data)
	}
	files := map[string]string{}
	if j.ArtifactKey == "" {
		return all.String(), files
	}
	rc, err := b.deps.Artifacts.Get(t.Context(), j.ArtifactKey)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	all.Write(raw)
	if d, err := b.deps.Artifacts.Get(t.Context(), drydock.DiffArtifactKey(j.ID)); err == nil {
		patch, _ := io.ReadAll(d)
		d.Close()
		all.Write(patch)
		files[diffFile] = string(patch)
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the masked archive is not a valid tar: %v", err)
		}
		body, _ := io.ReadAll(tr)
		files[hdr.Name] = string(body)
	}
	return all.String(), files
}

func TestJobSecretsReachTheSandboxAndNothingElse(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		b := setup(t)
		box := newBox(t)
		ag := &leakyAgent{fail: fail}
		b.deps.Agent, b.deps.Secrets = ag, box
		logFile, err := os.Create(filepath.Join(t.TempDir(), "log"))
		if err != nil {
			t.Fatal(err)
		}
		b.deps.Logger = slog.New(slog.NewTextHandler(logFile, nil))
		id := b.createSealed(t, box, drydock.SecretValues{"CANARY": canary})
		b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
		j := waitTerminal(t, b.store, id)
		ag.mu.Lock()
		saw := ag.saw
		ag.mu.Unlock()
		if !strings.Contains(saw, "secret-ok") {
			t.Fatalf("the sandbox's process did not see the secret: %q (job %s %q)", saw, j.Status, j.Error)
		}
		if len(j.SealedSecrets) != 0 {
			t.Error("the sealed secrets were kept after the job ended")
		}
		all, files := b.everything(t, j)
		if strings.Contains(all, canary) {
			t.Errorf("fail=%v: the secret is in the job's output:\n%s", fail, all)
		}
		if logs, _ := os.ReadFile(logFile.Name()); strings.Contains(string(logs), canary) {
			t.Errorf("fail=%v: the secret is in the server's log", fail)
		}
		stars := strings.Repeat("*", len(canary))
		if got := files["leak-"+stars+".txt"]; got != stars+"\n" {
			t.Errorf("fail=%v: the leaked file in the archive: %q (files %v)", fail, got, keys(files))
		}
		if d := files[diffFile]; !strings.Contains(d, "+++ b/leak-"+stars+".txt\n") || !strings.Contains(d, "+"+stars+"\n") {
			t.Errorf("fail=%v: the stored diff lacks the masked file:\n%s", fail, d)
		}
		if !strings.Contains(files["env.txt"], "CANARY="+stars) {
			t.Errorf("fail=%v: env.txt in the archive lacks the masked variable", fail)
		}
		if fail && (j.Status != drydock.StatusError || !strings.Contains(j.Error, "failed with "+stars)) {
			t.Errorf("job: %s %q", j.Status, j.Error)
		}
		if !fail && (j.Status != drydock.StatusComplete || j.Summary != "done; it was "+stars) {
			t.Errorf("job: %s %q %q", j.Status, j.Error, j.Summary)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestJobSecretsUnderAnotherKeyFailTheJob(t *testing.T) {
	t.Parallel()
	for name, box := range map[string]*secretbox.Box{"changed key": newBox(t), "no key": nil} {
		b := setup(t)
		b.deps.Secrets = box
		id := b.createSealed(t, newBox(t), drydock.SecretValues{"CANARY": canary})
		b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
		j := waitTerminal(t, b.store, id)
		if j.Status != drydock.StatusError || !strings.Contains(j.Error, "--secrets-key-file") {
			t.Errorf("%s: job %s %q; want an error naming --secrets-key-file", name, j.Status, j.Error)
		}
		if j.SandboxID != "" {
			t.Errorf("%s: a sandbox was started for a job whose secrets cannot be opened", name)
		}
		if b.agent.starts.Load() != 0 {
			t.Errorf("%s: the agent ran", name)
		}
	}
}

// A recovered job whose secrets no longer open fails the same way, and its
// sandbox (which holds the values) is destroyed with it, not archived.
func TestRecoveredJobUnderAnotherKeyLosesItsSandbox(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deps.Secrets = newBox(t)
	id := b.createSealed(t, newBox(t), drydock.SecretValues{"CANARY": canary})
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
	// A reaper pass a minute away: only the runner can remove it in time.
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond, ReapInterval: time.Hour})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusError || !strings.Contains(j.Error, "--secrets-key-file") {
		t.Errorf("job %s %q; want an error naming --secrets-key-file", j.Status, j.Error)
	}
	if j.ArtifactKey != "" {
		t.Errorf("the workspace was archived (%s) without the values to mask", j.ArtifactKey)
	}
	if _, err := b.runtime.Get(t.Context(), sb.ID); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Errorf("the recovered job's sandbox outlived it: %v", err)
	}
}

// With a follow-up window, a job that ends with an archive keeps its
// sealed secrets (a follow-up inherits them) and the reaper erases them
// once the window has passed; without one they go when the job ends.
func TestFinishedJobKeepsItsSecretsForTheFollowUpWindow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		window time.Duration
		kept   bool
	}{{"no window", 0, false}, {"a window", time.Hour, true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			box := newBox(t)
			b.deps.Agent, b.deps.Secrets = &leakyAgent{}, box
			id := b.createSealed(t, box, drydock.SecretValues{"CANARY": canary})
			b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond, FollowUpSecrets: c.window})
			j := waitTerminal(t, b.store, id)
			if j.Status != drydock.StatusComplete || j.ArtifactKey == "" {
				t.Fatalf("job %s %q, archive %q", j.Status, j.Error, j.ArtifactKey)
			}
			if kept := len(j.SealedSecrets) > 0; kept != c.kept {
				t.Fatalf("sealed secrets kept = %v; want %v", kept, c.kept)
			}
			if !c.kept {
				return
			}
			vals, err := box.Open(id, j.SealedSecrets)
			if err != nil || vals["CANARY"] != canary {
				t.Fatalf("the kept secrets open to %v (%v)", vals, err)
			}
			// The reaper's cut-off, as it computes it a window later.
			if n, err := b.store.EraseSecretsFinishedBefore(t.Context(), j.FinishedAt.Add(time.Second)); err != nil || n != 1 {
				t.Fatalf("erase past the window: %d %v", n, err)
			}
		})
	}
}

// The reaper erases the secrets a finished job kept once its window has
// passed.
func TestReaperErasesKeptSecretsAfterTheWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	box := newBox(t)
	b.deps.Agent, b.deps.Secrets = &leakyAgent{}, box
	id := b.createSealed(t, box, drydock.SecretValues{"CANARY": canary})
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond, ReapInterval: 50 * time.Millisecond, FollowUpSecrets: time.Millisecond})
	waitTerminal(t, b.store, id)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		j, err := b.store.GetJob(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(j.SealedSecrets) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the kept secrets outlived their window")
		}
	}
}
