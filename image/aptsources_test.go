package image_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/image"
)

// writeApt makes a machine root whose /etc/apt holds files.
func writeApt(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, "etc", "apt", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// The image is built from the archives the machine's apt already uses,
// in either format, in the order main, updates, security; other suites,
// source entries, disabled stanzas and archives without main are left out.
func TestHostMirrors(t *testing.T) {
	root := writeApt(t, map[string]string{
		"sources.list": "# a comment\n" +
			"deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] http://mirror.example.com/debian bookworm main contrib # trailing\n" +
			"deb-src http://mirror.example.com/debian bookworm main\n" +
			"deb http://mirror.example.com/debian trixie main\n" +
			"deb http://other.example.com/debian bookworm contrib\n",
		"sources.list.d/debian.sources": "Types: deb\n# a snapshot\nURIs: http://cache.example.com/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n" +
			"Types: deb\nURIs: http://cache.example.com/debian-security\nSuites: bookworm-security\nComponents: main non-free-firmware\nSigned-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n -----END PGP PUBLIC KEY BLOCK-----\n\n" +
			"Types: deb\nURIs: http://off.example.com/debian\nSuites: bookworm\nComponents: main\nEnabled: no\n",
		"sources.list.d/vendor.list.disabled": "deb http://vendor.example.com/debian bookworm main\n",
	})
	got, err := image.HostMirrors(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"deb http://mirror.example.com/debian bookworm main",
		"deb http://cache.example.com/debian bookworm main",
		"deb http://cache.example.com/debian bookworm-updates main",
		"deb http://cache.example.com/debian-security bookworm-security main",
	}
	if !slices.Equal(got, want) {
		t.Errorf("HostMirrors =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A machine whose apt names no bookworm archive with main (another release,
// or none at all) gets an error that says how to give the archives.
func TestHostMirrorsWithoutTheSuite(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"no apt sources":  {},
		"another release": {"sources.list": "deb http://mirror.example.com/ubuntu noble main\n"},
		"only updates":    {"sources.list": "deb http://mirror.example.com/debian bookworm-updates main\n"},
	} {
		_, err := image.HostMirrors(writeApt(t, files))
		if err == nil || !strings.Contains(err.Error(), "--mirror") || !strings.Contains(err.Error(), "bookworm") {
			t.Errorf("%s: %v; want an error naming the suite and --mirror", name, err)
		}
	}
}
