package runner_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/gittest"
	"github.com/drydockhq/drydock/runner"
	"github.com/drydockhq/drydock/secretbox"
	"github.com/drydockhq/drydock/toolbox"
)

const repoToken = "repo-token-7c1d9e2b4f"

// repoAgent records what the workspace held when the agent started: the
// checked-out commit and the files. With hold set, the first run waits for
// its context to end, as a long agent run would when its server stops.
type repoAgent struct {
	hold  atomic.Bool
	runs  atomic.Int64
	mu    sync.Mutex
	heads []string
	files [][]string
	env   string // the sandbox's GIT_TOKEN and OTHER_SECRET, or "none"
}

func (a *repoAgent) Run(ctx context.Context, run *drydock.AgentRun) (*drydock.AgentOutcome, error) {
	a.runs.Add(1)
	c := toolbox.New(run.Sandbox.Endpoint, run.Sandbox.Token)
	defer c.Close()
	var out bytes.Buffer
	if _, err := c.Exec(ctx, toolbox.ExecRequest{Command: "git rev-parse HEAD && ls -A | sort | tr '\\n' ' '"}, &out, &out); err != nil {
		return nil, err
	}
	head, files, _ := strings.Cut(out.String(), "\n")
	var env bytes.Buffer
	if _, err := c.Exec(ctx, toolbox.ExecRequest{Command: "echo ${GIT_TOKEN:-none} ${OTHER_SECRET:-none}"}, &env, &env); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.heads = append(a.heads, head)
	a.files = append(a.files, strings.Fields(files))
	a.env = strings.TrimSpace(env.String())
	a.mu.Unlock()
	if a.hold.Load() {
		if err := c.WriteFile(ctx, "work.txt", []byte("the agent's work")); err != nil {
			return nil, err
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &drydock.AgentOutcome{Summary: "looked at the clone"}, nil
}

func (b *bundle) createRepoJob(t *testing.T, box *secretbox.Box, repo drydock.RepoSpec, secrets drydock.SecretValues) string {
	t.Helper()
	id := newID(t)
	j := &drydock.Job{ID: id, CreatedAt: time.Now(), OwnerID: "local",
		JobSpec: drydock.JobSpec{Task: "work on the repository", Profile: drydock.ProfileHeadless, Repo: &repo}}
	if len(secrets) > 0 {
		sealed, err := box.Seal(id, secrets)
		if err != nil {
			t.Fatal(err)
		}
		j.Secrets, j.SecretNames, j.SealedSecrets = secrets, secrets.Names(), sealed
	}
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := b.store.CreateJob(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	return id
}

// A job starts in a clone of its repository at the ref it names (default
// branch, branch, tag, commit), authenticated with the job's secret; the
// token is in none of the job's events, error, summary, archive (its
// .git/config included) or the server's log.
func TestJobStartsInACloneOfItsRepository(t *testing.T) {
	t.Parallel()
	git := gittest.New(t, gittest.Options{Token: repoToken})
	for _, tc := range []struct {
		name, ref string
		head      string
		files     string
	}{
		{"default branch", "", git.Commits["main"], ".git README.md src"},
		{"branch", "feature/x", git.Commits["feature/x"], ".git README.md feature.txt src"},
		{"tag", "v1.0", git.Commits["v1.0"], ".git README.md"},
		{"commit", git.Commits["feature/x"], git.Commits["feature/x"], ".git README.md feature.txt src"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			box := newBox(t)
			ag := &repoAgent{}
			var logs bytes.Buffer
			var logMu sync.Mutex
			b.deps.Agent, b.deps.Secrets = ag, box
			b.deps.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))
			id := b.createRepoJob(t, box, drydock.RepoSpec{URL: git.URL, Ref: tc.ref, Secret: "GIT_TOKEN"},
				drydock.SecretValues{"GIT_TOKEN": repoToken, "OTHER_SECRET": "other-secret-value"})
			b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
			j := waitTerminal(t, b.store, id)
			if j.Status != drydock.StatusComplete {
				t.Fatalf("job: %s %q", j.Status, j.Error)
			}
			ag.mu.Lock()
			head, files := ag.heads[0], strings.Join(ag.files[0], " ")
			ag.mu.Unlock()
			if head != tc.head || files != tc.files {
				t.Errorf("the agent started at %s with %q; want %s with %q", head, files, tc.head, tc.files)
			}
			// Only git gets the repository's token; the job's other
			// secrets reach the sandbox's processes as before.
			if ag.env != "none other-secret-value" {
				t.Errorf("the agent's processes see GIT_TOKEN and OTHER_SECRET as %q; want none and the value", ag.env)
			}
			all, archived := b.everything(t, j)
			if !strings.Contains(all, "The workspace holds a clone of "+git.URL) {
				t.Errorf("no event says what the workspace holds:\n%s", all)
			}
			logMu.Lock()
			all += logs.String()
			logMu.Unlock()
			b64 := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + repoToken))
			for _, leak := range []string{repoToken, b64} {
				if strings.Contains(all, leak) {
					t.Errorf("the token (%s) is in the job's output or the log", leak)
				}
			}
			cfg, ok := archived[".git/config"]
			if !ok || !strings.Contains(cfg, "url = "+git.URL+"\n") || strings.Contains(cfg, "extraheader") {
				t.Errorf("archived .git/config:\n%s", cfg)
			}
			authorized := false
			for _, a := range git.Authorizations() {
				authorized = authorized || a == "Basic "+b64
			}
			if !authorized {
				t.Errorf("the git server never received the token: %q", git.Authorizations())
			}
		})
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A clone that fails fails the job before the agent runs, with git's
// reason, the token masked.
func TestCloneFailureFailsTheJob(t *testing.T) {
	t.Parallel()
	git := gittest.New(t, gittest.Options{Token: repoToken})
	for _, tc := range []struct {
		name    string
		repo    drydock.RepoSpec
		secrets drydock.SecretValues
		want    string
	}{
		{"no token", drydock.RepoSpec{URL: git.URL}, nil, "the repository asks for credentials: name a job secret holding a token in repo.secret"},
		{"wrong token", drydock.RepoSpec{URL: git.URL, Secret: "T"}, drydock.SecretValues{"T": "not-the-token-123"}, "the repository refused the token in the job's secret T"},
		{"unknown branch", drydock.RepoSpec{URL: git.URL, Ref: "nope", Secret: "T"}, drydock.SecretValues{"T": repoToken}, "nope not found"},
		{"unknown commit", drydock.RepoSpec{URL: git.URL, Ref: strings.Repeat("0", 40), Secret: "T"}, drydock.SecretValues{"T": repoToken}, "checking out commit"},
		{"no such repository", drydock.RepoSpec{URL: strings.Replace(git.URL, "project", "other", 1), Secret: "T"}, drydock.SecretValues{"T": repoToken}, "cloning"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			box := newBox(t)
			ag := &repoAgent{}
			b.deps.Agent, b.deps.Secrets = ag, box
			id := b.createRepoJob(t, box, tc.repo, tc.secrets)
			b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
			j := waitTerminal(t, b.store, id)
			if j.Status != drydock.StatusError || !strings.Contains(j.Error, tc.want) || !strings.Contains(j.Error, tc.repo.URL) {
				t.Fatalf("job: %s %q; want an error naming the URL and %q", j.Status, j.Error, tc.want)
			}
			if strings.Contains(j.Error, repoToken) {
				t.Fatalf("the error shows the token: %q", j.Error)
			}
			if n := ag.runs.Load(); n != 0 {
				t.Fatalf("the agent ran %d times after a failed clone", n)
			}
		})
	}
}

// A recovered job whose clone completed is not cloned again: the agent's
// work in the workspace stays and the git server hears nothing more.
func TestRecoveredJobIsNotClonedAgain(t *testing.T) {
	t.Parallel()
	git := gittest.New(t, gittest.Options{})
	b := setup(t)
	ag := &repoAgent{}
	ag.hold.Store(true)
	b.deps.Agent = ag
	id := b.createRepoJob(t, nil, drydock.RepoSpec{URL: git.URL}, nil)

	first := runner.New(runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond}, b.deps)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { first.Run(ctx) })
	sb := b.waitSandbox(t, id)
	c := toolbox.New(sb.Endpoint, sb.Token)
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := c.Stat(t.Context(), "work.txt"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	wg.Wait()
	requests := len(git.Authorizations())

	ag.hold.Store(false)
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusComplete || j.Attempts != 2 {
		t.Fatalf("recovered job: %s %q (attempt %d)", j.Status, j.Error, j.Attempts)
	}
	if n := len(git.Authorizations()); n != requests {
		t.Errorf("the recovered job asked the git server %d more times", n-requests)
	}
	ag.mu.Lock()
	defer ag.mu.Unlock()
	if len(ag.files) != 2 || !strings.Contains(strings.Join(ag.files[1], " "), "work.txt") {
		t.Errorf("the resumed agent saw %q; want the agent's work kept", ag.files)
	}
}

// A job recovered from a server that stopped during the clone (no clone
// recorded; the agent never ran) gets an emptied workspace and a clone.
func TestRecoveredJobFinishesAnUnfinishedClone(t *testing.T) {
	t.Parallel()
	git := gittest.New(t, gittest.Options{})
	b := setup(t)
	ag := &repoAgent{}
	b.deps.Agent = ag
	id := b.createRepoJob(t, nil, drydock.RepoSpec{URL: git.URL}, nil)
	if job, err := b.store.ClaimJob(t.Context(), "n:dead", time.Hour); err != nil || job == nil {
		t.Fatal(job, err)
	}
	sb, err := b.runtime.Create(t.Context(), drydock.SandboxSpec{JobID: id, Profile: drydock.ProfileHeadless,
		Labels: map[string]string{drydock.LabelManaged: "true", drydock.LabelJob: id, drydock.LabelServer: "n"}})
	if err != nil {
		t.Fatal(err)
	}
	c := toolbox.New(sb.Endpoint, sb.Token)
	defer c.Close()
	if err := c.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{".git/objects/pack/half", "half-written"} {
		if err := c.WriteFile(t.Context(), f, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.store.UpdateProgress(t.Context(), id, "n:dead", drydock.JobProgress{SandboxID: &sb.ID}); err != nil {
		t.Fatal(err)
	}
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusComplete {
		t.Fatalf("recovered job: %s %q", j.Status, j.Error)
	}
	ag.mu.Lock()
	defer ag.mu.Unlock()
	if got := strings.Join(ag.files[0], " "); got != ".git README.md src" || ag.heads[0] != git.Commits["main"] {
		t.Errorf("the agent started at %s with %q", ag.heads[0], got)
	}
}

// pushAgent changes the clone as an agent would: a new file, an edited
// one, and an output saved under .drydock (the orchestrator's, never
// committed).
type pushAgent struct{ summary string }

func (a *pushAgent) Run(ctx context.Context, run *drydock.AgentRun) (*drydock.AgentOutcome, error) {
	c := toolbox.New(run.Sandbox.Endpoint, run.Sandbox.Token)
	defer c.Close()
	for name, text := range map[string]string{"fix.txt": "fixed\n", "README.md": "# project, fixed\n", ".drydock/outputs/x.txt": "output"} {
		if err := c.WriteFile(ctx, name, []byte(text)); err != nil {
			return nil, err
		}
	}
	return &drydock.AgentOutcome{Summary: a.summary}, nil
}

func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"--git-dir", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// A completed job's changes are committed (the agent's summary as the
// message, masked; the job's author) and pushed to its branch with the
// job's token; the job shows the pushed commit. The token stays out of
// the job's output.
func TestCompletedJobPushesItsChanges(t *testing.T) {
	t.Parallel()
	git := gittest.New(t, gittest.Options{Token: repoToken})
	b := setup(t)
	box := newBox(t)
	b.deps.Agent, b.deps.Secrets = &pushAgent{summary: "Fixed the README (token " + repoToken + ")"}, box
	id := b.createRepoJob(t, box, drydock.RepoSpec{URL: git.URL, Secret: "GIT_TOKEN",
		Push: &drydock.RepoPush{Branch: "drydock/fix-readme", Author: "Ada Lovelace <ada@example.com>"}}, drydock.SecretValues{"GIT_TOKEN": repoToken})
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusComplete {
		t.Fatalf("job: %s %q", j.Status, j.Error)
	}
	pushed := hostGit(t, git.Dir, "rev-parse", "refs/heads/drydock/fix-readme")
	if j.PushedCommit != pushed {
		t.Fatalf("the job shows pushed commit %q; the branch is at %s", j.PushedCommit, pushed)
	}
	if got := hostGit(t, git.Dir, "log", "-1", "--format=%an <%ae>|%cn|%P|%B", pushed); got != "Ada Lovelace <ada@example.com>|Ada Lovelace|"+git.Commits["main"]+"|Fixed the README (token "+strings.Repeat("*", len(repoToken))+")\n\nDrydock-Job: "+id {
		t.Errorf("the commit: %q", got)
	}
	if got := hostGit(t, git.Dir, "ls-tree", "-r", "--name-only", pushed); got != "README.md\nfix.txt\nsrc/app.py" {
		t.Errorf("the commit's files: %q", got)
	}
	if got := hostGit(t, git.Dir, "rev-parse", "refs/heads/main"); got != git.Commits["main"] {
		t.Errorf("main moved to %s", got)
	}
	all, _ := b.everything(t, j)
	if strings.Contains(all, repoToken) {
		t.Errorf("the token is in the job's output")
	}
	if !strings.Contains(all, "pushed commit "+pushed+" to branch drydock/fix-readme") {
		t.Errorf("no event names the push")
	}
}

// A push the repository refuses (the branch moved elsewhere: never forced)
// fails the job, saying its work is in the archive; a job that changed
// nothing pushes nothing.
func TestPushRefusedOrNothingToPush(t *testing.T) {
	t.Parallel()
	git := gittest.New(t, gittest.Options{})
	hostGit(t, git.Dir, "update-ref", "refs/heads/drydock/taken", git.Commits["feature/x"])
	b := setup(t)
	b.deps.Agent = &pushAgent{summary: "changed things"}
	id := b.createRepoJob(t, nil, drydock.RepoSpec{URL: git.URL, Push: &drydock.RepoPush{Branch: "drydock/taken"}}, nil)
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusError || !strings.Contains(j.Error, "the job's work is in its archive, but pushing it to drydock/taken failed") ||
		!strings.Contains(j.Error, "rejected") || j.ArtifactKey == "" || j.PushedCommit != "" {
		t.Fatalf("job: %s %q artifact %q pushed %q", j.Status, j.Error, j.ArtifactKey, j.PushedCommit)
	}
	if got := hostGit(t, git.Dir, "rev-parse", "refs/heads/drydock/taken"); got != git.Commits["feature/x"] {
		t.Errorf("the branch was forced to %s", got)
	}

	b2 := setup(t)
	b2.deps.Agent = &repoAgent{}
	id = b2.createRepoJob(t, nil, drydock.RepoSpec{URL: git.URL, Push: &drydock.RepoPush{Branch: "drydock/nothing"}}, nil)
	b2.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	if j := waitTerminal(t, b2.store, id); j.Status != drydock.StatusComplete || j.PushedCommit != "" {
		t.Fatalf("job that changed nothing: %s %q pushed %q", j.Status, j.Error, j.PushedCommit)
	}
	if out, err := exec.Command("git", "--git-dir", git.Dir, "rev-parse", "--verify", "-q", "refs/heads/drydock/nothing").CombinedOutput(); err == nil {
		t.Errorf("a branch was pushed for no change: %s", out)
	}
}

// recordingRuntime keeps the specs of the sandboxes it is asked for.
type recordingRuntime struct {
	drydock.Runtime
	mu    sync.Mutex
	specs []drydock.SandboxSpec
}

func (r *recordingRuntime) Create(ctx context.Context, spec drydock.SandboxSpec) (*drydock.Sandbox, error) {
	r.mu.Lock()
	r.specs = append(r.specs, spec)
	r.mu.Unlock()
	return r.Runtime.Create(ctx, spec)
}

// The runtime is told that a repository job's sandbox needs a way out (to
// the repository's host and port), so one that has none (Kubernetes
// without an egress gateway) refuses it with its own message.
func TestSandboxOfARepositoryJobNeedsEgress(t *testing.T) {
	t.Parallel()
	git := gittest.New(t, gittest.Options{})
	b := setup(t)
	rec := &recordingRuntime{Runtime: b.runtime}
	b.deps.Runtime, b.deps.Agent = rec, &repoAgent{}
	id := b.createRepoJob(t, nil, drydock.RepoSpec{URL: git.URL}, nil)
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	if j := waitTerminal(t, b.store, id); j.Status != drydock.StatusComplete {
		t.Fatalf("job: %s %q", j.Status, j.Error)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	host := strings.TrimSuffix(strings.TrimPrefix(git.URL, "http://"), "/project.git")
	if len(rec.specs) != 1 || strings.Join(rec.specs[0].Egress, ",") != host {
		t.Fatalf("sandbox specs %+v; want egress [%s]", rec.specs, host)
	}
}
