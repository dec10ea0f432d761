package image

import (
	"cmp"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	_ "embed"

	"github.com/drydockhq/drydock"
)

//go:embed packages/npm.txt
var npmList string

// NPMPackage is one tarball from the npm registry that the image carries
// (packages/npm.txt).
type NPMPackage struct {
	Name    string
	Version string
	// Integrity is the registry's dist.integrity ("sha512-<base64>").
	Integrity string
	// Arch is the Debian architecture the package is for; empty: all.
	Arch string
}

// NPMPackages returns the npm packages of an image for a Debian
// architecture (amd64, arm64).
func NPMPackages(arch string) ([]NPMPackage, error) {
	var out []NPMPackage
	for _, line := range parseList(npmList) {
		f := strings.Fields(line)
		if len(f) < 3 || len(f) > 4 {
			return nil, fmt.Errorf("packages/npm.txt: %q is not NAME VERSION INTEGRITY [ARCH]", line)
		}
		p := NPMPackage{Name: f[0], Version: f[1], Integrity: f[2]}
		if len(f) == 4 {
			p.Arch = f[3]
		}
		if sum, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(p.Integrity, "sha512-")); err != nil ||
			!strings.HasPrefix(p.Integrity, "sha512-") || len(sum) != sha512.Size {
			return nil, fmt.Errorf("packages/npm.txt: %s: the integrity must be sha512-<base64 of 64 bytes>", p.Name)
		}
		if p.Arch == "" || p.Arch == arch {
			out = append(out, p)
		}
	}
	return out, nil
}

// NodeVersion is the version of Node.js the image carries.
func NodeVersion() string {
	pkgs, _ := NPMPackages(debianArch())
	for _, p := range pkgs {
		if strings.HasPrefix(p.Name, "node-linux-") {
			return p.Version
		}
	}
	return ""
}

// role is the file name setup.sh expects a package under: "node" for
// Node.js, else the name without "@" and with "-" for "/" (types-node).
func (p NPMPackage) role() string {
	if strings.HasPrefix(p.Name, "node-linux-") {
		return "node"
	}
	return strings.ReplaceAll(strings.TrimPrefix(p.Name, "@"), "/", "-")
}

// tarballPath is where the registry serves the package's tarball, relative
// to the registry's URL (scoped names keep their scope in the directory).
func (p NPMPackage) tarballPath() string {
	base := p.Name
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	return p.Name + "/-/" + base + "-" + p.Version + ".tgz"
}

// debianArch is the build host's architecture by Debian's name, which is
// what mmdebstrap builds for by default.
func debianArch() string {
	switch runtime.GOARCH {
	case "386":
		return "i386"
	case "arm":
		return "armhf"
	}
	return runtime.GOARCH // amd64, arm64, riscv64, ppc64le, s390x
}

// npmRegistry returns the registry to fetch from: the one configured, else
// npm's environment variable, else the host's npm configuration. No registry's name is written into the
// code: the operator's npm decides, as it does for their own installs.
func npmRegistry(ctx context.Context, configured string) (string, error) {
	reg := strings.TrimSpace(configured)
	if reg == "" {
		// npm's own variable, which npm would read first too.
		reg = strings.TrimSpace(cmp.Or(os.Getenv("NPM_CONFIG_REGISTRY"), os.Getenv("npm_config_registry")))
	}
	if reg == "" {
		if _, err := exec.LookPath("npm"); err != nil {
			return "", drydock.Errorf(drydock.EINVALID, "the image needs Node.js from an npm registry: pass --npm-registry URL (npm is not installed here to ask `npm config get registry`)")
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(cctx, "npm", "config", "get", "registry").Output()
		if err != nil {
			return "", drydock.Errorf(drydock.EINVALID, "npm config get registry: %v; pass --npm-registry URL", err)
		}
		reg = strings.TrimSpace(string(out))
	}
	u, err := url.Parse(reg)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", drydock.Errorf(drydock.EINVALID, "npm registry %q is not an http(s) URL", reg)
	}
	return strings.TrimSuffix(reg, "/") + "/", nil
}

// fetchNPM puts the verified tarballs of the image's npm packages into dir
// under the names setup.sh reads. Tarballs are kept in cacheDir by their
// integrity, so a rebuild does not download them again.
func (b *builder) fetchNPM(ctx context.Context, dir string) error {
	pkgs, err := NPMPackages(debianArch())
	if err != nil {
		return err
	}
	if len(pkgs) == 0 || NodeVersion() == "" {
		return drydock.Errorf(drydock.EINVALID, "packages/npm.txt has no Node.js for architecture %s", debianArch())
	}
	var registry string
	cache := filepath.Join(b.opts.CacheDir, "npm")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return fmt.Errorf("create npm cache: %w", err)
	}
	for _, p := range pkgs {
		sum, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(p.Integrity, "sha512-"))
		cached := filepath.Join(cache, fmt.Sprintf("%s-%s-%x.tgz", strings.ReplaceAll(p.Name, "/", "_"), p.Version, sum[:8]))
		if err := verifyFile(cached, p.Integrity); err != nil {
			if registry == "" {
				if registry, err = npmRegistry(ctx, b.opts.NPMRegistry); err != nil {
					return err
				}
			}
			b.logf("npm: fetching %s@%s", p.Name, p.Version)
			if err := download(ctx, registry+p.tarballPath(), cached, p.Integrity); err != nil {
				return fmt.Errorf("fetch %s@%s: %w", p.Name, p.Version, err)
			}
		}
		if err := os.Link(cached, filepath.Join(dir, p.role()+".tgz")); err != nil {
			return fmt.Errorf("stage %s: %w", p.Name, err)
		}
	}
	return nil
}

// verifyFile checks a file against an npm integrity string.
func verifyFile(path, integrity string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil)); got != integrity {
		return fmt.Errorf("%s has integrity %s, want %s", path, got, integrity)
	}
	return nil
}

// download writes url to dst (atomically) if its content has the integrity.
func download(ctx context.Context, url, dst, integrity string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, res.Status)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".download-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha512.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), res.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if got := "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil)); got != integrity {
		return fmt.Errorf("GET %s: the tarball's integrity is %s, not the pinned %s; refusing it", url, got, integrity)
	}
	return os.Rename(tmp.Name(), dst)
}
