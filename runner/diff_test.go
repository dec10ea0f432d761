package runner_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runner"
)

// The runner records the workspace's starting point before the agent runs
// and stores the diff beside the archive when the job ends, so the diff
// outlives the sandbox: a job that started empty shows every file added.
func TestFinishedJobStoresItsDiffBesideTheArchive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.create(t, "write some files")
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
