package runner_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runner"
)

// priorAgent records what the runner gives a run, then runs the inner
// agent.
type priorAgent struct {
	inner   drydock.Agent
	mu      sync.Mutex
	prior   []*drydock.Event
	history []*drydock.Event
}

func (a *priorAgent) Run(ctx context.Context, run *drydock.AgentRun) (*drydock.AgentOutcome, error) {
	a.mu.Lock()
	a.prior, a.history = run.Prior, run.History
	a.mu.Unlock()
	return a.inner.Run(ctx, run)
}

// finishedWithLog stores a finished job that follows up parent ("" for
// none) and logs what an agent's run logs.
func (b *bundle) finishedWithLog(t *testing.T, parent, task string) string {
	t.Helper()
	id := newID(t)
	if err := b.store.CreateJob(t.Context(), &drydock.Job{ID: id, OwnerID: "local", ParentJobID: parent,
		JobSpec: drydock.JobSpec{Task: task, Profile: drydock.ProfileHeadless}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		typ  drydock.EventType
		data string
	}{
		{drydock.EventModel, `{"step": 1, "text": "model of ` + task + `"}`},
		{drydock.EventUsage, `{"input_tokens": 10}`},
		{drydock.EventToolCall, `{"id": "c1", "name": "bash"}`},
		{drydock.EventObservation, `{"id": "c1", "name": "bash", "output": "output of ` + task + `"}`},
		{drydock.EventLog, `{"level": "warn", "message": "notice of ` + task + `", "notice": true}`},
		{drydock.EventSummary, `{"summary": "summary of ` + task + `"}`},
	} {
		if err := b.store.AppendEvent(t.Context(), &drydock.Event{JobID: id, Type: e.typ, Data: json.RawMessage(e.data)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.store.CancelJob(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	return id
}

// A follow-up's agent gets the conversation of its ancestors, root first,
// each led by its task and holding only the kinds a prompt is built from;
// its history is its own log.
func TestFollowUpGetsItsAncestorsConversation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ag := &priorAgent{inner: b.agent}
	b.deps.Agent = ag
	root := b.finishedWithLog(t, "", "root task")
	mid := b.finishedWithLog(t, root, "second task")
	key := b.putInput(t, newID(t), map[string]string{"a.txt": "a\n"})
	id := strings.TrimSuffix(key, ".input.tar.gz")
	if err := b.store.CreateJob(t.Context(), &drydock.Job{ID: id, OwnerID: "local", ParentJobID: mid, InputKey: key, InputSize: 1,
		JobSpec: drydock.JobSpec{Task: "third task [fake:steps=1]", Profile: drydock.ProfileHeadless}}); err != nil {
		t.Fatal(err)
	}
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	if j := waitTerminal(t, b.store, id); j.Status != drydock.StatusComplete {
		t.Fatalf("follow-up: %s %q", j.Status, j.Error)
	}
	var got []string
	for _, e := range ag.prior {
		got = append(got, string(e.Type)+" "+e.JobID[len(e.JobID)-4:])
	}
	short := func(id string) string { return id[len(id)-4:] }
	var want []string
	for _, j := range []string{root, mid} {
		for _, typ := range []string{"task", "model", "observation", "log"} {
			want = append(want, typ+" "+short(j))
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("prior:\n got %v\nwant %v", got, want)
	}
	if !strings.Contains(string(ag.prior[0].Data), "root task") || !strings.Contains(string(ag.prior[4].Data), "second task") ||
		!strings.Contains(string(ag.prior[4].Data), `"status":"cancelled"`) {
		t.Errorf("the tasks in prior: %s, %s", ag.prior[0].Data, ag.prior[4].Data)
	}
	for _, e := range ag.history {
		if e.JobID != id {
			t.Fatalf("the follow-up's history holds an event of job %s", e.JobID)
		}
	}
	// The workspace was restored from the parent's archive (its copy) and
	// said so.
	es, err := b.store.ListEvents(t.Context(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	said := false
	for _, e := range es {
		said = said || strings.Contains(string(e.Data), "seeded from the archive of job "+mid)
	}
	if !said {
		t.Error("no event says the workspace came from the parent's archive")
	}
}

// A follow-up's diff is against its parent's result: the baseline is
// taken after the parent's workspace is restored, so the parent's files
// are no change, a file it changes is a modification, and its archive
// holds the parent's files and its own.
func TestFollowUpDiffIsAgainstItsParentsResult(t *testing.T) {
	t.Parallel()
	b := setup(t)
	parent := b.finishedWithLog(t, "", "first")
	key := b.putInput(t, newID(t), map[string]string{"README.md": "# from the parent\n", "SUMMARY.md": "the parent's summary\n"})
	id := strings.TrimSuffix(key, ".input.tar.gz")
	if err := b.store.CreateJob(t.Context(), &drydock.Job{ID: id, OwnerID: "local", ParentJobID: parent, InputKey: key, InputSize: 1,
		JobSpec: drydock.JobSpec{Task: "go on [fake:steps=1]", Profile: drydock.ProfileHeadless}}); err != nil {
		t.Fatal(err)
	}
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusComplete {
		t.Fatalf("follow-up: %s %q", j.Status, j.Error)
	}
	rc, err := b.deps.Artifacts.Get(t.Context(), drydock.DiffArtifactKey(id))
	if err != nil {
		t.Fatalf("no stored diff: %v", err)
	}
	raw, _ := io.ReadAll(rc)
	rc.Close()
	patch := string(raw)
	if strings.Contains(patch, "README.md") {
		t.Errorf("the diff shows the parent's unchanged README.md as a change:\n%s", patch)
	}
	if !strings.Contains(patch, "diff --git a/SUMMARY.md b/SUMMARY.md\nindex ") || !strings.Contains(patch, "-the parent's summary") {
		t.Errorf("the diff does not show SUMMARY.md changed from the parent's:\n%s", patch)
	}
	if !strings.Contains(patch, "new file mode") || !strings.Contains(patch, "notes/") {
		t.Errorf("the diff lacks the follow-up's new notes:\n%s", patch)
	}
	if got, ok := b.archived(t, j, "README.md"); !ok || got != "# from the parent\n" {
		t.Errorf("the archive lacks the parent's README.md: %q %v", got, ok)
	}
	if _, ok := b.archived(t, j, "notes/step-001.md"); !ok {
		t.Error("the archive lacks the follow-up's own note")
	}
}
