package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/docker"
	"github.com/drydockhq/drydock/toolbox"
)

// engine is one container engine with a sandbox runtime on it.
type engine struct {
	Engine
	rt       *docker.Runtime
	images   map[drydock.Profile]string
	stateDir string
}

// openEngine connects to the engine at host (Docker or Podman) with a
// runtime whose sandboxes carry serverID and live in their own state dir.
func openEngine(ctx context.Context, host, serverID string, images map[drydock.Profile]string) (*engine, error) {
	dir, err := os.MkdirTemp("", "dd-bench-")
	if err != nil {
		return nil, err
	}
	rt, err := docker.New(docker.Options{Host: host, ServerID: serverID, StateDir: dir, Images: images})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := rt.Client().ServerVersion(vctx, client.ServerVersionOptions{})
	if err != nil {
		rt.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("engine at %s: %w", host, err)
	}
	e := &engine{Engine: Engine{Name: "docker", Version: v.Version, Host: host}, rt: rt, images: images, stateDir: dir}
	for _, c := range v.Components {
		if strings.HasPrefix(c.Name, "Podman") {
			e.Name, e.Version = "podman", c.Version
		}
	}
	for _, p := range []drydock.Profile{drydock.ProfileHeadless, drydock.ProfileDesktop} {
		if _, err := rt.Client().ImageInspect(vctx, e.image(p)); err != nil {
			rt.Close()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("image %s on %s (%s): %w; build it with drydock image build --profile %s --docker-host %s", e.image(p), e.Name, host, err, p, host)
		}
	}
	return e, nil
}

func (e *engine) image(p drydock.Profile) string {
	if img := e.images[p]; img != "" {
		return img
	}
	return "drydock-sandbox:" + string(p)
}

func (e *engine) close() {
	e.rt.Close()
	os.RemoveAll(e.stateDir)
}

// sandbox is a created sandbox and its toolboxd client.
type sandbox struct {
	*drydock.Sandbox
	tc *toolbox.Client
}

// create makes a sandbox of profile; the caller destroys it.
func (e *engine) create(ctx context.Context, profile drydock.Profile) (*sandbox, error) {
	sb, err := e.rt.Create(ctx, drydock.SandboxSpec{JobID: "bench-" + drydock.RandomHex(4), Image: e.image(profile), Profile: profile})
	if err != nil {
		return nil, fmt.Errorf("create %s sandbox on %s: %w", profile, e.Name, err)
	}
	return &sandbox{Sandbox: sb, tc: toolbox.New(sb.Endpoint, sb.Token)}, nil
}

// withReady runs f on a new sandbox of profile once it is ready, and
// destroys the sandbox afterwards whatever happens.
func (e *engine) withReady(ctx context.Context, profile drydock.Profile, f func(*sandbox) error) (err error) {
	sb, err := e.create(ctx, profile)
	if err != nil {
		return err
	}
	defer func() {
		if derr := e.destroy(ctx, sb); err == nil {
			err = derr
		}
	}()
	if err := sb.tc.WaitReady(ctx, readyComponents(profile)...); err != nil {
		return fmt.Errorf("%s sandbox on %s: %w", profile, e.Name, err)
	}
	return f(sb)
}

// destroy removes a sandbox even when ctx has ended (Ctrl-C), so that none
// is left behind.
func (e *engine) destroy(ctx context.Context, sb *sandbox) error {
	sb.tc.Close()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := e.rt.Destroy(dctx, sb.ID); err != nil {
		return fmt.Errorf("destroy sandbox %s on %s: %w", sb.ID, e.Name, err)
	}
	return nil
}

// readyComponents are what a profile's sandbox must have ready before it is
// usable: the core for all, the display and VNC for the desktop.
func readyComponents(p drydock.Profile) []string {
	if p == drydock.ProfileDesktop {
		return []string{"display", "vnc"}
	}
	return nil
}

// engineExec runs argv in the sandbox through the engine's exec API, as
// `docker exec` does: create, attach, read the output to its end, inspect
// for the exit code.
func (e *engine) engineExec(ctx context.Context, id string, argv ...string) (int, error) {
	cli := e.rt.Client()
	ex, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{AttachStdout: true, AttachStderr: true, Cmd: argv})
	if err != nil {
		return 0, fmt.Errorf("exec create: %w", err)
	}
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return 0, fmt.Errorf("exec attach: %w", err)
	}
	defer att.Close()
	if _, err := stdcopy.StdCopy(io.Discard, io.Discard, att.Reader); err != nil {
		return 0, fmt.Errorf("exec output: %w", err)
	}
	for {
		res, err := cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
		if err != nil {
			return 0, fmt.Errorf("exec inspect: %w", err)
		}
		if !res.Running {
			return res.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}
