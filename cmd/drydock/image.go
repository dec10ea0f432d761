package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/image"
)

// ImageCmd groups image commands.
type ImageCmd struct {
	Build ImageBuildCmd `cmd:"" help:"Build the sandbox image from Debian packages (no registry needed); cached by input hash."`
}

// ImageBuildCmd builds the sandbox image.
type ImageBuildCmd struct {
	Profile    string `default:"desktop" enum:"desktop,headless" help:"desktop (Xvfb, window manager, VNC, xdotool) or headless."`
	Toolboxd   string `help:"Path of the static toolboxd binary (default: next to this binary)." type:"path"`
	DockerHost string `env:"DOCKER_HOST" help:"Docker or Podman API socket."`
	CacheDir   string `help:"Where the rootfs tarballs are cached (default: the user cache dir)." type:"path"`
	// No default: the registry is the operator's, as their npm says.
	// No default either: the apt archives are the machine's.
	Mirrors     []string `name:"mirror" env:"DRYDOCK_APT_MIRRORS" sep:"none" placeholder:"SOURCE" help:"apt source line for the Debian bookworm packages, e.g. 'deb http://mirror.example.com/debian bookworm main' (repeat for the -updates and -security archives). Default: this machine's own apt sources (/etc/apt)."`
	NPMRegistry string   `name:"npm-registry" env:"DRYDOCK_NPM_REGISTRY" placeholder:"URL" help:"npm registry to fetch Node.js, npm and TypeScript from (pinned by integrity in image/packages/npm.txt). Default: $NPM_CONFIG_REGISTRY, else npm config get registry."`
}

func (c *ImageBuildCmd) Run(g *Globals) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.Toolboxd == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find toolboxd: %w (pass --toolboxd)", err)
		}
		c.Toolboxd = filepath.Join(filepath.Dir(exe), "toolboxd")
	}
	if _, err := os.Stat(c.Toolboxd); err != nil {
		return fmt.Errorf("toolboxd not found at %s: build it with 'make build' or pass --toolboxd", c.Toolboxd)
	}
	ref, err := image.Build(ctx, image.Options{
		Profile:     drydock.Profile(c.Profile),
		Toolboxd:    c.Toolboxd,
		DockerHost:  c.DockerHost,
		CacheDir:    c.CacheDir,
		NPMRegistry: c.NPMRegistry,
		Mirrors:     c.Mirrors,
		Progress:    g.Err,
	})
	if err != nil {
		return fmt.Errorf("build %s image: %w", c.Profile, err)
	}
	fmt.Fprintln(g.Out, ref)
	return nil
}
