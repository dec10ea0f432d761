package image

import (
	"crypto/sha512"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// Every architecture the image is built for gets Node.js (a version current
// React tooling supports), npm and TypeScript, each pinned by a sha512.
func TestNPMPackages(t *testing.T) {
	t.Parallel()
	for _, arch := range []string{"amd64", "arm64"} {
		pkgs, err := NPMPackages(arch)
		if err != nil {
			t.Fatal(err)
		}
		roles := map[string]NPMPackage{}
		for _, p := range pkgs {
			if _, dup := roles[p.role()]; dup {
				t.Errorf("%s: two packages install as %s", arch, p.role())
			}
			roles[p.role()] = p
		}
		for _, want := range []string{"node", "npm", "typescript", "types-node", "undici-types"} {
			if _, ok := roles[want]; !ok {
				t.Errorf("%s: no %s package", arch, want)
			}
		}
		// Vite wants ^20.19 || >=22.12; 22 and 24 are the LTS lines.
		if major, _, _ := strings.Cut(roles["node"].Version, "."); major != "22" && major != "24" && major != "26" {
			t.Errorf("%s: Node.js %s is not a current LTS line", arch, roles["node"].Version)
		}
		// The kernel transpiles with the compiler's JavaScript API, which
		// TypeScript 7 (a native binary) does not have.
		if major, _, _ := strings.Cut(roles["typescript"].Version, "."); len(major) > 1 || major >= "7" {
			t.Errorf("TypeScript %s has no JavaScript compiler API for the kernel", roles["typescript"].Version)
		}
	}
	if v := NodeVersion(); v == "" && (debianArch() == "amd64" || debianArch() == "arm64") {
		t.Error("NodeVersion is empty on a supported architecture")
	}
}

func TestNPMTarballPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    NPMPackage
		want string
	}{
		{NPMPackage{Name: "npm", Version: "11.0.0"}, "npm/-/npm-11.0.0.tgz"},
		{NPMPackage{Name: "@types/node", Version: "24.1.0"}, "@types/node/-/node-24.1.0.tgz"},
	} {
		if got := tc.p.tarballPath(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.p.Name, got, tc.want)
		}
	}
}

func TestNPMRegistryRefusesWhatIsNotAURL(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"file:///etc", "registry.example.com", "https://", "ftp://registry.example.com/"} {
		if _, err := npmRegistry(t.Context(), bad); drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("%q: got %v, want EINVALID", bad, err)
		}
	}
	got, err := npmRegistry(t.Context(), "https://registry.example.com/npm")
	if err != nil || got != "https://registry.example.com/npm/" {
		t.Errorf("got %q, %v", got, err)
	}
}

// A registry (or anything between) that serves other bytes than the pinned
// ones is refused, and nothing is left in the cache.
func TestDownloadChecksIntegrity(t *testing.T) {
	t.Parallel()
	good := []byte("the real tarball")
	sum := sha512.Sum512(good)
	integrity := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/good.tgz" {
			w.Write(good)
			return
		}
		w.Write([]byte("a tampered tarball"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	dst := filepath.Join(dir, "pkg.tgz")
	err := download(t.Context(), srv.URL+"/evil.tgz", dst, integrity)
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("tampered tarball: got %v, want a refusal", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused download left %v", entries)
	}
	if err := download(t.Context(), srv.URL+"/good.tgz", dst, integrity); err != nil {
		t.Fatal(err)
	}
	if err := verifyFile(dst, integrity); err != nil {
		t.Error(err)
	}
}
