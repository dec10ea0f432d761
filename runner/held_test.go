package runner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runner"
)

func (b *bundle) createHeld(t *testing.T, timeout time.Duration) string {
	t.Helper()
	id := newID(t)
	spec := drydock.JobSpec{Agent: drydock.AgentNone, Profile: drydock.ProfileHeadless, Timeout: drydock.Duration(timeout)}
	if err := b.store.CreateJob(t.Context(), &drydock.Job{ID: id, Status: drydock.StatusPending, CreatedAt: time.Now(), OwnerID: "local", JobSpec: spec}); err != nil {
		t.Fatal(err)
	}
	return id
}

// waitRunning waits until the job's sandbox is recorded and returns the job.
func waitSandbox(t *testing.T, st drydock.Store, id string) *drydock.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		j, err := st.GetJob(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.SandboxID != "" || j.Status.Terminal() {
			return j
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %s got no sandbox in time", id)
	return nil
}

// A job with agent "none" never starts the agent: its sandbox is held for
// the caller until the job's timeout, which ends it complete (the normal
// end of a held sandbox, not an error), with its workspace archived.
func TestHeldSandboxRunsNoAgentAndEndsCompleteAtItsTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.createHeld(t, 2*time.Second)
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusComplete || j.ArtifactKey == "" {
		t.Fatalf("held job ended %s %q artifact=%q; want complete with an archive", j.Status, j.Error, j.ArtifactKey)
	}
	if !strings.Contains(j.Summary, "held") {
		t.Errorf("summary %q does not say the sandbox was held", j.Summary)
	}
	if n := b.agent.starts.Load(); n != 0 {
		t.Errorf("the agent ran %d times for a job with agent none", n)
	}
	evs, err := b.store.ListEvents(t.Context(), id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var held bool
	for _, e := range evs {
		held = held || strings.Contains(string(e.Data), `"kind":"sandbox_held"`)
	}
	if !held {
		t.Error("the log does not say that the sandbox is held for the caller")
	}
}

// A cancel ends a held sandbox as cancelled, archived like any job.
func TestHeldSandboxEndsOnCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.createHeld(t, time.Hour)
	b.start(t, runner.Config{NodeID: "n", LeaseTTL: 300 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	waitSandbox(t, b.store, id)
	if _, err := b.store.CancelJob(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusCancelled || j.ArtifactKey == "" {
		t.Errorf("job: %s %q artifact=%q; want cancelled with an archive", j.Status, j.Error, j.ArtifactKey)
	}
	if n := b.agent.starts.Load(); n != 0 {
		t.Errorf("the agent ran %d times for a job with agent none", n)
	}
}
