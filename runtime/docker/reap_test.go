package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
)

// The state directories of containers removed behind the runtime's back
// are swept; those of live containers, of a Create in progress and of
// another engine's sandboxes in a shared state directory stay.
func TestPruneStateDirs(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		create := func() *drydock.Sandbox {
			sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "prune-" + drydock.RandomHex(4), Image: s.image})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rt.Destroy(context.Background(), sb.ID) })
			return sb
		}
		live := create()
		removed := create()
		if _, err := rt.cli.ContainerRemove(t.Context(), removed.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		fresh := create()
		if _, err := rt.cli.ContainerRemove(t.Context(), fresh.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		orphan := func(engine string) string {
			d := filepath.Join(rt.stateDir, "drydock-"+drydock.RandomHex(8))
			if err := os.MkdirAll(filepath.Join(d, "toolbox"), 0o700); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(d) })
			if engine != "" {
				if err := os.WriteFile(filepath.Join(d, engineFile), []byte(engine), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			return d
		}
		otherEngine := orphan("unix:///run/another-engine.sock")
		unmarked := orphan("")
		old := time.Now().Add(-time.Hour)
		for _, d := range []string{live.ID, removed.ID, otherEngine, unmarked} {
			if err := os.Chtimes(filepath.Join(rt.stateDir, filepath.Base(d)), old, old); err != nil {
				t.Fatal(err)
			}
		}

		n, err := rt.PruneStateDirs(t.Context())
		if err != nil || n != 1 {
			t.Fatalf("PruneStateDirs: %d, %v; want 1", n, err)
		}
		for _, c := range []struct {
			id   string
			kept bool
		}{{live.ID, true}, {removed.ID, false}, {fresh.ID, true}, {otherEngine, true}, {unmarked, true}} {
			_, err := os.Stat(filepath.Join(rt.stateDir, filepath.Base(c.id)))
			if kept := err == nil; kept != c.kept {
				t.Errorf("%s: kept %v, want %v (%v)", filepath.Base(c.id), kept, c.kept, err)
			}
		}
		if _, err := rt.Get(t.Context(), live.ID); err != nil {
			t.Errorf("live sandbox: %v", err)
		}
	})
}

// A create that fails, whether the engine refuses the container or the start
// fails once the container exists, leaves neither a container nor the state
// directory behind.
func TestFailedCreateCleansUp(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s setup) {
		for _, tc := range []struct {
			name  string
			opts  Options
			start func(id string) error
		}{
			{name: "engine refuses", opts: Options{OCIRuntime: "drydock-no-such-runtime"}},
			{name: "start fails", start: func(string) error { return errors.New("injected start failure") }},
		} {
			dir := stateDir(t)
			tc.opts.Host, tc.opts.StateDir = s.host, dir
			rt, err := New(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			var created string
			if tc.start != nil {
				rt.beforeStart = func(id string) error {
					created = id
					return tc.start(id)
				}
			}
			job := "fail-" + drydock.RandomHex(4)
			if sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: job, Image: s.image}); err == nil {
				rt.Destroy(context.Background(), sb.ID)
				t.Fatalf("%s: Create succeeded", tc.name)
			} else {
				t.Logf("%s: Create failed as expected: %v", tc.name, err)
			}
			if list, err := rt.List(t.Context(), map[string]string{drydock.LabelJob: job}); err != nil || len(list) != 0 {
				t.Errorf("%s: List = %d sandboxes, %v; want none", tc.name, len(list), err)
			}
			if created != "" {
				if _, err := rt.Client().ContainerInspect(t.Context(), created, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
					t.Errorf("%s: container %s still exists: %v", tc.name, created, err)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%s: %d state dirs left", tc.name, len(entries))
			}
		}
	})
}
