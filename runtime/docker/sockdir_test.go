package docker

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
)

// The attack: /run/toolbox is a host directory, and a sandbox that could
// write it would fill the host's disk (3 GiB in 1.75 s) past the workspace
// and memory limits. Once Create returns, nothing in the sandbox may
// create, fill, rename or remove anything there, and nothing it tried lands
// on the host; toolboxd still answers through its socket.
func TestSandboxCannotWriteItsSocketDir(t *testing.T) {
	t.Parallel()
	forEngineAndImage(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		sb := secure(t, s, rt)
		dir := socketDir(rt.sandboxDir(sb.ID, sb.Labels))

		attempts := []string{
			"dd if=/dev/zero of=/run/toolbox/fill bs=1M count=16",
			"echo x > /run/toolbox/file",
			"mkdir /run/toolbox/dir",
			"ln -s /etc/passwd /run/toolbox/link",
			"mkfifo /run/toolbox/fifo",
			"mv /run/toolbox/toolboxd.sock /run/toolbox/moved",
			"rm -f /run/toolbox/toolboxd.sock",
			"chmod 777 /run/toolbox",
		}
		var script strings.Builder
		for _, a := range attempts {
			script.WriteString("if (" + a + ") 2>/dev/null; then echo 'WROTE: " + a + "'; else echo 'refused: " + a + "'; fi\n")
		}
		script.WriteString("ls -la /run/toolbox\n")
		r := sh(t.Context(), t, rt.Client(), sb.ID, script.String())
		t.Logf("from inside:\n%s%s", r.stdout, r.stderr)
		for line := range strings.Lines(r.stdout) {
			if strings.HasPrefix(line, "WROTE: ") {
				t.Errorf("the sandbox could: %s", strings.TrimPrefix(strings.TrimSpace(line), "WROTE: "))
			}
		}

		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != sealedMode {
			t.Errorf("socket dir mode %v, want %o", fi.Mode().Perm(), sealedMode)
		}
		if names := dirNames(t, dir); !slices.Equal(names, []string{toolboxSocket}) {
			t.Errorf("host socket dir holds %v, want only %s", names, toolboxSocket)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := runtimetest.Probe(ctx, sb); err != nil {
			t.Errorf("toolboxd after the attempts: %v", err)
		}
	})
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Sealing judges only what it opened: the state the host finds, whatever
// the sandbox did before. These run without an engine: the socket is there
// already, so the wait returns at once.
func TestSealTakesTheDirectoryOver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := socketDir(dir)
	if err := os.Mkdir(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(sock, 0o777)
	ln, err := net.Listen("unix", filepath.Join(sock, toolboxSocket))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// A daemon that does not remove its boot secrets leaves them to the
	// seal, which must not leave them to the sandbox's processes.
	if err := os.WriteFile(filepath.Join(sock, bootSecretsFile), []byte(`{"token":"t"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Runtime{}
	if err := r.sealSocketDir(t.Context(), "drydock-0000000000000000", dir); err != nil {
		t.Fatalf("seal: %v", err)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != sealedMode {
		t.Errorf("after the seal: %v %v; want mode %o", fi, err, sealedMode)
	}
	if names := dirNames(t, sock); !slices.Equal(names, []string{toolboxSocket}) {
		t.Errorf("after the seal the dir holds %v, want only %s", names, toolboxSocket)
	}
}

// Anything the sandbox made before the seal (a file it may hold open and go
// on filling, a link, a directory) fails the seal, and so the Create.
func TestSealRefusesWhatTheSandboxLeft(t *testing.T) {
	t.Parallel()
	hostFile := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(hostFile, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	for what, plant := range map[string]func(sock string) error{
		"a file":        func(sock string) error { return os.WriteFile(filepath.Join(sock, "fill"), make([]byte, 4096), 0o644) },
		"a directory":   func(sock string) error { return os.Mkdir(filepath.Join(sock, "d"), 0o777) },
		"a link":        func(sock string) error { return os.Symlink(hostFile, filepath.Join(sock, "l")) },
		"a fake egress": func(sock string) error { return os.WriteFile(filepath.Join(sock, egressSocket), nil, 0o666) },
		"a linked socket": func(sock string) error {
			return os.Symlink(filepath.Join(sock, toolboxSocket), filepath.Join(sock, "alias.sock"))
		},
	} {
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			sock := socketDir(dir)
			if err := os.Mkdir(sock, 0o777); err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("unix", filepath.Join(sock, toolboxSocket))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if err := plant(sock); err != nil {
				t.Fatal(err)
			}
			err = (&Runtime{}).sealSocketDir(t.Context(), "drydock-0000000000000000", dir)
			if err == nil {
				t.Fatalf("seal accepted a socket dir holding %s", what)
			}
			t.Logf("seal refused: %v", err)
			if b, _ := os.ReadFile(hostFile); string(b) != "host" {
				t.Errorf("host file holds %q", b)
			}
		})
	}
}

// A socket directory the sandbox could write (one created before the seal
// existed, or filled before it) may hold links to the host's files and
// directories; destroying the sandbox, or sweeping its directory as an
// orphan, removes the links and never what they name.
func TestRemovalNeverFollowsLinksInTheSocketDir(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		hostDir := t.TempDir()
		hostFile := filepath.Join(hostDir, "precious")
		if err := os.WriteFile(hostFile, []byte("precious"), 0o600); err != nil {
			t.Fatal(err)
		}
		plantLinks := func(sock string) {
			t.Helper()
			os.Chmod(sock, 0o777) // as it was before the seal
			for name, target := range map[string]string{"file-link": hostFile, "dir-link": hostDir, "parent-link": "../.."} {
				if err := os.Symlink(target, filepath.Join(sock, name)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Link(hostFile, filepath.Join(sock, "hard-link")); err != nil {
				t.Logf("no hard link: %v", err)
			}
			nested := filepath.Join(sock, "nested")
			if err := os.Mkdir(nested, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(hostDir, filepath.Join(nested, "deeper")); err != nil {
				t.Fatal(err)
			}
		}
		intact := func(when string) {
			t.Helper()
			if b, err := os.ReadFile(hostFile); err != nil || string(b) != "precious" {
				t.Errorf("%s: host file %q, %v", when, b, err)
			}
			if fi, err := os.Stat(hostFile); err == nil && fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: host file mode %v", when, fi.Mode().Perm())
			}
		}

		// Destroy.
		sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "links-" + drydock.RandomHex(4), Image: s.image})
		if err != nil {
			t.Fatal(err)
		}
		dir := rt.sandboxDir(sb.ID, sb.Labels)
		plantLinks(socketDir(dir))
		if err := rt.Destroy(t.Context(), sb.ID); err != nil {
			t.Fatalf("Destroy: %v", err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("Destroy left the state dir: %v", err)
		}
		intact("after Destroy")

		// An orphan swept by PruneStateDirs.
		sb, err = rt.Create(t.Context(), drydock.SandboxSpec{JobID: "links-" + drydock.RandomHex(4), Image: s.image})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Destroy(context.Background(), sb.ID) })
		dir = rt.sandboxDir(sb.ID, sb.Labels)
		plantLinks(socketDir(dir))
		if _, err := rt.cli.ContainerRemove(t.Context(), sb.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(dir, old, old); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.PruneStateDirs(t.Context()); err != nil {
			t.Fatalf("PruneStateDirs: %v", err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("PruneStateDirs left the orphan's dir: %v", err)
		}
		intact("after PruneStateDirs")
		if entries, err := os.ReadDir(hostDir); err != nil || len(entries) != 1 {
			t.Errorf("host dir after removals: %v %v", entries, err)
		}
	})
}
