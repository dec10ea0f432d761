package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
)

func TestReap(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		create := func(job string) *drydock.Sandbox {
			sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: job, Image: s.image})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rt.Destroy(context.Background(), sb.ID) })
			return sb
		}
		live := create("reap-live-" + drydock.RandomHex(4))
		done := create("reap-done-" + drydock.RandomHex(4))

		// Directories of sandboxes whose container vanished (an engine wiped
		// under us): an old one is reaped, a fresh one may be a Create in
		// progress and stays.
		oldOrphan := filepath.Join(rt.stateDir, "drydock-"+drydock.RandomHex(8))
		newOrphan := filepath.Join(rt.stateDir, "drydock-"+drydock.RandomHex(8))
		for _, d := range []string{oldOrphan, newOrphan} {
			if err := os.MkdirAll(filepath.Join(d, "toolbox"), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(oldOrphan, old, old); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(newOrphan) })

		// Other tests share the engine: keep every job but this test's
		// finished one.
		reaped, err := rt.Reap(t.Context(), func(job string) bool { return job != done.Labels[drydock.LabelJob] })
		if err != nil {
			t.Fatalf("Reap: %v", err)
		}
		if !slices.Equal(reaped, []string{done.ID}) {
			t.Errorf("reaped %v, want [%s]", reaped, done.ID)
		}
		if _, err := rt.Get(t.Context(), done.ID); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("reaped sandbox still there: %v", err)
		}
		if _, err := rt.Get(t.Context(), live.ID); err != nil {
			t.Errorf("live sandbox reaped: %v", err)
		}
		if _, err := os.Stat(oldOrphan); !os.IsNotExist(err) {
			t.Errorf("old orphan dir not removed: %v", err)
		}
		if _, err := os.Stat(newOrphan); err != nil {
			t.Errorf("fresh orphan dir removed: %v", err)
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
