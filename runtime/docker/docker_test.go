package docker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			s := setup{host: requireEngine(t, e.env)}
			s.image = testImage(t, s.host)
			runtimetest.Run(t, func(t *testing.T) drydock.Runtime { return s.newRuntime(t) }, runtimetest.Options{
				Image:     s.image,
				Resources: drydock.Resources{MemoryBytes: 256 << 20, WorkspaceBytes: 64 << 20, TmpBytes: 32 << 20},
				FailingSpec: func(spec drydock.SandboxSpec) drydock.SandboxSpec {
					spec.Image = "drydock-no-such-image:missing"
					return spec
				},
				// The stand-in toolboxd cannot be claimed: the warm pool's
				// cases run on the real one (without bash, so no shell).
				ClaimSpec: func(spec drydock.SandboxSpec) drydock.SandboxSpec {
					spec.Image = toolboxdImage(t, s.host)
					spec.Env = map[string]string{"TOOLBOXD_SERVICES": "none"}
					return spec
				},
			})
		})
	}
}

// TestConformanceRealImage runs the suite on the image drydock image build
// makes, when DRYDOCK_TEST_IMAGE names it (e.g. drydock-sandbox:headless).
func TestConformanceRealImage(t *testing.T) {
	t.Parallel()
	img := os.Getenv("DRYDOCK_TEST_IMAGE")
	if img == "" {
		t.Skip("DRYDOCK_TEST_IMAGE is not set; build one with drydock image build")
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			s := setup{host: requireEngine(t, e.env), image: img}
			runtimetest.Run(t, func(t *testing.T) drydock.Runtime { return s.newRuntime(t) }, runtimetest.Options{Image: img})
		})
	}
}

func TestResourcesDefaults(t *testing.T) {
	t.Parallel()
	r := &Runtime{opts: Options{Defaults: drydock.Resources{PidsLimit: 99}}}
	got := r.resources(drydock.Resources{MemoryBytes: 1 << 30})
	want := DefaultResources
	want.MemoryBytes = 1 << 30
	want.PidsLimit = 99
	if got != want {
		t.Errorf("resources = %+v, want %+v", got, want)
	}
	if err := validResources(drydock.Resources{CPUs: 1, MemoryBytes: 1 << 20, PidsLimit: 100, WorkspaceBytes: 1 << 30, TmpBytes: 1 << 30}); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Errorf("1 MiB of memory accepted: %v", err)
	}
}

// A label must not be able to point Destroy's RemoveAll outside the
// sandbox's own directory.
func TestSandboxDirTrustsOnlyItsOwnLabel(t *testing.T) {
	t.Parallel()
	r := &Runtime{stateDir: "/run/drydock/sandboxes"}
	id := "drydock-0123456789abcdef"
	for _, tc := range []struct{ label, want string }{
		{"", "/run/drydock/sandboxes/" + id},
		{"/elsewhere/" + id, "/elsewhere/" + id},
		{"/etc", "/run/drydock/sandboxes/" + id},
		{"relative/" + id, "/run/drydock/sandboxes/" + id},
		{"/x/../" + id, "/run/drydock/sandboxes/" + id},
	} {
		if got := r.sandboxDir(id, map[string]string{labelStateDir: tc.label}); got != tc.want {
			t.Errorf("label %q: dir %s, want %s", tc.label, got, tc.want)
		}
	}
	if got := filepath.Base(r.sandboxDir(id, nil)); got != id {
		t.Errorf("dir base %s, want %s", got, id)
	}
}
