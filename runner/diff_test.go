package runner_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runner"
	"github.com/drydockhq/drydock/toolbox"
)

// The runner records the workspace's starting point before the agent runs
// and stores the diff beside the archive when the job ends, so the diff
// outlives the sandbox: a job that started empty shows every file added.
func TestFinishedJobStoresItsDiffBesideTheArchive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.create(t, "write some files [fake:steps=2]")
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusComplete || j.ArtifactKey == "" {
		t.Fatalf("job %s %q, archive %q", j.Status, j.Error, j.ArtifactKey)
	}
	rc, err := b.deps.Artifacts.Get(t.Context(), drydock.DiffArtifactKey(id))
	if err != nil {
		t.Fatalf("no stored diff: %v", err)
	}
	defer rc.Close()
	raw, _ := io.ReadAll(rc)
	patch := string(raw)
	if !strings.Contains(patch, "diff --git a/SUMMARY.md b/SUMMARY.md\nnew file mode 100644\n") {
		t.Errorf("the diff lacks the agent's SUMMARY.md as a new file:\n%s", patch)
	}
	if strings.Contains(patch, "deleted file") || strings.Contains(patch, ".drydock-diff") {
		t.Errorf("the diff shows more than the agent's work:\n%s", patch)
	}
}

// noGit is a sandbox whose image lacks git.
type noGit struct{ conn }

func (noGit) Baseline(context.Context) (string, error) {
	return "", drydock.Errorf(drydock.EUNAVAILABLE, "record baseline: exit 127: git is not installed in the sandbox")
}

// A sandbox that cannot record its starting point costs the job its diff,
// said in its events, not its run.
func TestJobWithoutABaselineRunsAndSaysWhy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deps.Toolbox = func(sb *drydock.Sandbox) runner.Toolbox { return noGit{conn{toolbox.New(sb.Endpoint, sb.Token)}} }
	id := b.create(t, "write some files [fake:steps=2]")
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusComplete || j.ArtifactKey == "" {
		t.Fatalf("job %s %q, archive %q", j.Status, j.Error, j.ArtifactKey)
	}
	es, err := b.store.ListEvents(t.Context(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	said := false
	for _, e := range es {
		said = said || (e.Type == drydock.EventLog && strings.Contains(string(e.Data), "will have no diff: record baseline: exit 127: git is not installed"))
	}
	if !said {
		t.Error("no event says why the job has no diff")
	}
	if _, err := b.deps.Artifacts.Get(t.Context(), drydock.DiffArtifactKey(id)); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Errorf("a diff was stored without a baseline: %v", err)
	}
}
