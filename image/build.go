package image

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"debug/elf"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
)

// Repository is the image name every build is tagged under. Runtimes default
// to Repository + ":" + profile.
const Repository = "drydock-sandbox"

// baseRepository holds the imported root filesystems that final images are
// layered on.
const baseRepository = "drydock-sandbox-base"

// Paths and environment inside the image. The runtime and toolboxd rely on
// them.
const (
	ToolboxdPath = "/usr/local/bin/toolboxd"
	Workspace    = "/workspace"
	Home         = "/home/agent"
	UID          = 1000
)

//go:embed packages/headless.txt
var headlessPackages string

//go:embed packages/desktop.txt
var desktopPackages string

//go:embed setup.sh
var setupScript string

// Options configures Build.
type Options struct {
	// Profile is headless or desktop; empty means desktop.
	Profile drydock.Profile
	// Toolboxd is the path of the static toolboxd binary to install.
	Toolboxd string
	// DockerHost is the engine's address (unix:///var/run/docker.sock, a
	// Podman socket, tcp://...); empty means DOCKER_HOST or the default.
	DockerHost string
	// CacheDir keeps rootfs tarballs between builds; empty means
	// $XDG_CACHE_HOME/drydock/image (or ~/.cache/drydock/image).
	CacheDir string
	// Mirrors overrides the apt sources lines mmdebstrap uses; empty
	// means this machine's own (HostMirrors).
	Mirrors []string
	// NPMRegistry is the npm registry Node.js, npm and TypeScript are
	// fetched from (packages/npm.txt pins them by integrity); empty means
	// the host's `npm config get registry`.
	NPMRegistry string
	// Progress receives one line per step; nil discards.
	Progress io.Writer
}

// Packages returns the Debian packages of a profile's image.
func Packages(p drydock.Profile) []string {
	pkgs := parseList(headlessPackages)
	if p == drydock.ProfileDesktop {
		pkgs = append(pkgs, parseList(desktopPackages)...)
	}
	slices.Sort(pkgs)
	return slices.Compact(pkgs)
}

// Changes returns the Dockerfile-style instructions applied on import. The
// Dockerfile repeats them; a test keeps the two in step.
func Changes(p drydock.Profile) []string {
	return []string{
		fmt.Sprintf("USER %d:%d", UID, UID),
		"WORKDIR " + Workspace,
		"ENV PATH=" + Home + "/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"ENV HOME=" + Home,
		// The root is read-only: npm's global installs and cache go to the
		// home (tmpfs), whose bin is on PATH. (npm_config_nodedir for
		// node-gyp's headers would make npm 11 warn on every command.)
		"ENV NPM_CONFIG_PREFIX=" + Home + "/.local",
		"ENV NPM_CONFIG_CACHE=" + Home + "/.npm",
		"ENV NPM_CONFIG_UPDATE_NOTIFIER=false",
		"ENV LANG=C.UTF-8",
		"ENV SHELL=/bin/bash",
		"ENV DRYDOCK_PROFILE=" + string(p),
		"LABEL drydock.profile=" + string(p),
		`ENTRYPOINT ["` + ToolboxdPath + `"]`,
	}
}

func parseList(s string) []string {
	var out []string
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// builder carries one build's state.
type builder struct {
	opts    Options
	cli     *client.Client
	out     io.Writer
	start   time.Time
	profile drydock.Profile
}

// Build makes sure the sandbox image for opts.Profile exists in the engine and
// returns its content-addressed reference (drydock-sandbox:<profile>-<hash>).
func Build(ctx context.Context, opts Options) (string, error) {
	if opts.Profile == "" {
		opts.Profile = drydock.ProfileDesktop
	}
	if !opts.Profile.Valid() {
		return "", drydock.Errorf(drydock.EINVALID, "unknown profile %q (want headless or desktop)", opts.Profile)
	}
	if err := checkStatic(opts.Toolboxd); err != nil {
		return "", err
	}
	if opts.CacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("find cache dir: %w", err)
		}
		opts.CacheDir = filepath.Join(dir, "drydock", "image")
	}
	if len(opts.Mirrors) == 0 {
		m, err := HostMirrors("/")
		if err != nil {
			return "", err
		}
		opts.Mirrors = m
	}
	out := opts.Progress
	if out == nil {
		out = io.Discard
	}
	cli, err := NewClient(opts.DockerHost)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	b := &builder{opts: opts, cli: cli, out: out, start: time.Now(), profile: opts.Profile}
	return b.build(ctx)
}

// NewClient connects to a Docker-compatible engine with API-version
// negotiation, so that Docker 20.10 (API 1.41) and Podman 4 work alike.
func NewClient(host string) (*client.Client, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client for %q: %w", host, err)
	}
	return cli, nil
}

func (b *builder) logf(format string, args ...any) {
	fmt.Fprintf(b.out, "[%5.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

func (b *builder) build(ctx context.Context) (string, error) {
	baseHash := b.rootfsHash()
	toolboxdHash, err := fileHash(b.opts.Toolboxd)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "drydock-image-v1\nbase %s\ntoolboxd %s\n", baseHash, toolboxdHash)
	for _, c := range Changes(b.profile) {
		fmt.Fprintf(h, "change %s\n", c)
	}
	finalRef := fmt.Sprintf("%s:%s-%s", Repository, b.profile, hex.EncodeToString(h.Sum(nil))[:12])
	currentRef := fmt.Sprintf("%s:%s", Repository, b.profile)

	if ok, err := b.imageExists(ctx, finalRef); err != nil {
		return "", err
	} else if ok {
		b.logf("image %s is up to date", finalRef)
		return finalRef, b.tag(ctx, finalRef, currentRef)
	}

	baseRef := baseTag(b.profile, baseHash, Changes(b.profile))
	ok, err := b.imageExists(ctx, baseRef)
	if err != nil {
		return "", err
	}
	if ok {
		b.logf("base image %s found", baseRef)
	} else {
		tarball := filepath.Join(b.opts.CacheDir, fmt.Sprintf("rootfs-%s-%s.tar", b.profile, baseHash))
		if _, err := os.Stat(tarball); err == nil {
			b.logf("rootfs %s found in cache", tarball)
		} else if err := b.mmdebstrap(ctx, tarball); err != nil {
			return "", err
		}
		if err := b.importBase(ctx, tarball, baseRef); err != nil {
			return "", err
		}
	}
	if err := b.addToolboxd(ctx, baseRef, finalRef); err != nil {
		return "", err
	}
	if err := b.tag(ctx, finalRef, currentRef); err != nil {
		return "", err
	}
	b.logf("built %s (also tagged %s)", finalRef, currentRef)
	return finalRef, nil
}

// baseTag names the imported rootfs by its content and the configuration
// applied on import: a commit adds ENV lines but never removes one the base
// has, so a variable dropped from Changes must give a new base (the rootfs
// tarball is reused).
func baseTag(profile drydock.Profile, rootfsHash string, changes []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "rootfs %s\n", rootfsHash)
	for _, c := range changes {
		fmt.Fprintf(h, "change %s\n", c)
	}
	return fmt.Sprintf("%s:%s-%s", baseRepository, profile, hex.EncodeToString(h.Sum(nil))[:12])
}

// rootfsArgs are mmdebstrap's arguments except the output and the setup hook,
// which are per-build paths.
func (b *builder) rootfsArgs() []string {
	args := []string{
		"--variant=apt",
		"--aptopt=APT::Install-Recommends \"false\"",
		"--dpkgopt=path-exclude=/usr/share/doc/*",
		"--dpkgopt=path-include=/usr/share/doc/*/copyright",
		"--dpkgopt=path-exclude=/usr/share/man/*",
		"--dpkgopt=path-exclude=/usr/share/info/*",
		"--include=" + strings.Join(Packages(b.profile), ","),
	}
	return args
}

func (b *builder) rootfsHash() string {
	h := sha256.New()
	fmt.Fprintf(h, "drydock-rootfs-v1\nprofile %s\n", b.profile)
	for _, a := range b.rootfsArgs() {
		fmt.Fprintf(h, "arg %s\n", a)
	}
	for _, m := range b.opts.Mirrors {
		fmt.Fprintf(h, "mirror %s\n", m)
	}
	fmt.Fprintf(h, "setup %s\n", setupScript)
	// The integrities pin the content, so the registry it came from is
	// not part of the hash.
	fmt.Fprintf(h, "npm %s\narch %s\n", npmList, debianArch())
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// mmdebstrap writes the finished rootfs tarball to dst, atomically so that an
// interrupted build never leaves a truncated tarball in the cache.
func (b *builder) mmdebstrap(ctx context.Context, dst string) error {
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return drydock.Errorf(drydock.EUNAVAILABLE, "mmdebstrap is not installed (apt-get install mmdebstrap)")
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("create cache dir: %w", err)
	}
	work, err := os.MkdirTemp(filepath.Dir(dst), ".build-")
	if err != nil {
		return fmt.Errorf("create build dir: %w", err)
	}
	defer os.RemoveAll(work)
	setup := filepath.Join(work, "setup.sh")
	if err := os.WriteFile(setup, []byte(setupScript), 0o755); err != nil {
		return fmt.Errorf("write setup script: %w", err)
	}
	npmDir := filepath.Join(work, "npm")
	if err := os.Mkdir(npmDir, 0o755); err != nil {
		return fmt.Errorf("create npm dir: %w", err)
	}
	if err := b.fetchNPM(ctx, npmDir); err != nil {
		return err
	}
	tmp := filepath.Join(work, "rootfs.tar")
	args := append(b.rootfsArgs(),
		"--customize-hook=sh "+setup+` "$1" `+npmDir,
		Suite, tmp, strings.Join(b.opts.Mirrors, "\n"))
	b.logf("mmdebstrap: building the %s rootfs (%d packages); this takes a few minutes", b.profile, len(Packages(b.profile)))
	cmd := exec.CommandContext(ctx, "mmdebstrap", args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	done := make(chan struct{})
	var tail []string
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			tail = append(tail, line)
			if len(tail) > 20 {
				tail = tail[1:]
			}
			// mmdebstrap's I: lines name each phase; the rest is apt and
			// dpkg chatter that would drown them.
			if strings.HasPrefix(line, "I: ") || strings.HasPrefix(line, "E: ") {
				b.logf("mmdebstrap: %s", strings.TrimPrefix(line, "I: "))
			}
		}
	}()
	err = cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		return fmt.Errorf("mmdebstrap: %w; last output:\n%s", err, strings.Join(tail, "\n"))
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("store rootfs: %w", err)
	}
	if fi, err := os.Stat(dst); err == nil {
		b.logf("rootfs cached at %s (%d MiB)", dst, fi.Size()>>20)
	}
	return nil
}

func (b *builder) importBase(ctx context.Context, tarball, ref string) error {
	f, err := os.Open(tarball)
	if err != nil {
		return fmt.Errorf("open rootfs: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat rootfs: %w", err)
	}
	b.logf("importing rootfs (%d MiB) as %s", fi.Size()>>20, ref)
	src := &progressReader{r: f, total: fi.Size(), report: func(done, total int64) {
		b.logf("importing: %d%%", done*100/total)
	}}
	res, err := b.cli.ImageImport(ctx, client.ImageImportSource{Source: src, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: Changes(b.profile), Message: "drydock rootfs"})
	if err != nil {
		return fmt.Errorf("import rootfs: %w", err)
	}
	defer res.Close()
	if err := drainJSONMessages(res); err != nil {
		return fmt.Errorf("import rootfs: %w", err)
	}
	if ok, err := b.imageExists(ctx, ref); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("import rootfs: engine reported success but %s is missing", ref)
	}
	return nil
}

// addToolboxd layers toolboxd onto the base image. A created (never started)
// container is enough to copy into and commit, on Docker and Podman alike.
func (b *builder) addToolboxd(ctx context.Context, baseRef, finalRef string) error {
	b.logf("adding toolboxd to %s", baseRef)
	// No labels: commit would carry them into the image. The name tells a
	// container left by a killed build apart, and this build removes it.
	name := "drydock-image-build-" + strings.TrimPrefix(finalRef, Repository+":")
	if _, err := b.cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove stale layering container: %w", err)
	}
	c, err := b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       name,
		Config:     &container.Config{Image: baseRef},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		return fmt.Errorf("create layering container: %w", err)
	}
	defer func() {
		// A fresh context: the build's may be cancelled, and the container
		// must go either way.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = b.cli.ContainerRemove(rctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}()
	content, err := toolboxdTar(b.opts.Toolboxd)
	if err != nil {
		return err
	}
	if _, err := b.cli.CopyToContainer(ctx, c.ID, client.CopyToContainerOptions{DestinationPath: "/", Content: content}); err != nil {
		return fmt.Errorf("copy toolboxd: %w", err)
	}
	if _, err := b.cli.ContainerCommit(ctx, c.ID, client.ContainerCommitOptions{
		Reference: finalRef,
		Comment:   "drydock: add toolboxd",
		Changes:   Changes(b.profile),
		NoPause:   true,
		// Podman's compat API fails to decode an empty body; an empty
		// config changes nothing on either engine.
		Config: &container.Config{},
	}); err != nil {
		return fmt.Errorf("commit %s: %w", finalRef, err)
	}
	return nil
}

func (b *builder) tag(ctx context.Context, src, dst string) error {
	if _, err := b.cli.ImageTag(ctx, client.ImageTagOptions{Source: src, Target: dst}); err != nil {
		return fmt.Errorf("tag %s as %s: %w", src, dst, err)
	}
	return nil
}

func (b *builder) imageExists(ctx context.Context, ref string) (bool, error) {
	_, err := b.cli.ImageInspect(ctx, ref)
	if err == nil {
		return true, nil
	}
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return false, fmt.Errorf("inspect image %s: %w", ref, err)
}

// checkStatic refuses a dynamically linked toolboxd: the image's libc is not
// the build host's, and a binary that fails to load there fails every sandbox.
func checkStatic(path string) error {
	if path == "" {
		return drydock.Errorf(drydock.EINVALID, "toolboxd binary path is required (build it with CGO_ENABLED=0 go build ./cmd/toolboxd)")
	}
	f, err := elf.Open(path)
	if err != nil {
		return drydock.Errorf(drydock.EINVALID, "toolboxd %s is not a Linux executable: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return drydock.Errorf(drydock.EINVALID, "toolboxd %s is dynamically linked; build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}

func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// toolboxdTar wraps the binary in the tar stream CopyToContainer wants,
// owned by root and not writable by the agent.
func toolboxdTar(path string) (io.Reader, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read toolboxd: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{
			Name: strings.TrimPrefix(ToolboxdPath, "/"), Mode: 0o755, Size: int64(len(data)),
			ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Format: tar.FormatPAX,
		})
		if err == nil {
			_, err = tw.Write(data)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// progressReader reports every tenth of the stream it has passed on.
type progressReader struct {
	r           io.Reader
	done, total int64
	nextReport  int64
	report      func(done, total int64)
}

func (p *progressReader) Read(buf []byte) (int, error) {
	n, err := p.r.Read(buf)
	p.done += int64(n)
	if p.total > 0 && p.done >= p.nextReport {
		p.report(p.done, p.total)
		p.nextReport = p.done + p.total/10
	}
	return n, err
}

// drainJSONMessages reads an engine's JSON progress stream to its end and
// returns the first error it reports: import and build answer 200 and
// report failures in the stream.
func drainJSONMessages(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read engine response: %w", err)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}
