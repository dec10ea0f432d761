package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/docker"
	localrt "github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/toolbox/hostclient"
)

// toolboxConn adapts the toolbox client to the narrow interfaces of the
// runner and the fake agent.
type toolboxConn struct{ *toolbox.Client }

func (t toolboxConn) WaitReady(ctx context.Context) error { return t.Client.WaitReady(ctx) }

func (t toolboxConn) DownloadTar(ctx context.Context, path string) (io.ReadCloser, error) {
	return t.Client.DownloadTar(ctx, path)
}

// forgetful drops a sandbox's cached client when the sandbox is destroyed.
type forgetful struct {
	drydock.Runtime
	pool *hostclient.Clients
}

func (f forgetful) Destroy(ctx context.Context, id string) error {
	f.pool.Forget(id)
	return f.Runtime.Destroy(ctx, id)
}

// buildRuntime returns the runtime twice: as the server's parts use it
// (destroying a sandbox there also drops its cached toolbox clients), and
// the engine's own, whose capabilities (claiming warm sandboxes, finding a
// sandbox by address) the warm pool and the egress proxy ask of it
// directly rather than by unwrapping the first.
func (c *ServerCmd) buildRuntime(ctx context.Context, log *slog.Logger) (served, engine drydock.Runtime, tb *hostclient.Clients, closeFn func(), err error) {
	pool := hostclient.NewClients()
	var rt drydock.Runtime
	closeFn = func() {}
	if c.Isolation == docker.ModeGVisor && c.Runtime != "docker" {
		return nil, nil, nil, nil, fmt.Errorf("--isolation gvisor applies to --runtime docker (Docker or Podman); on Kubernetes use --kube-runtime-class with a gVisor RuntimeClass, and the local runtime has no isolation at all")
	}
	switch c.Runtime {
	case "local":
		l, err := localrt.New(localrt.Options{Root: filepath.Join(c.DataDir, "sandboxes"), ServerID: c.NodeID, Logger: log})
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("local runtime: %w", err)
		}
		log.Warn("local runtime: sandboxes are plain directories with NO isolation; use it for development and tests only")
		rt, closeFn = l, func() { l.Close() }
	case "kubernetes":
		k, err := kubernetesRuntime(ctx, c.Kube, c.NodeID, map[drydock.Profile]string{
			drydock.ProfileHeadless: c.ImageHeadless,
			drydock.ProfileDesktop:  c.ImageDesktop,
		}, log)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		rt = k
	case "docker":
		d, err := docker.New(docker.Options{
			Host:     c.DockerHost,
			ServerID: c.NodeID,
			Images: map[drydock.Profile]string{
				drydock.ProfileHeadless: c.ImageHeadless,
				drydock.ProfileDesktop:  c.ImageDesktop,
			},
			Logger: log,
		})
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("docker runtime: %w", err)
		}
		if _, err := d.List(ctx, map[string]string{drydock.LabelManaged: "true"}); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("cannot reach the container engine (%s): %w; start Docker or Podman, or set --docker-host / DOCKER_HOST (or use --runtime local for development)", c.DockerHost, err)
		}
		iso, why, err := d.ResolveIsolation(ctx, c.Isolation, c.ImageHeadless)
		if err != nil {
			d.Close()
			return nil, nil, nil, nil, fmt.Errorf("docker runtime: %w", err)
		}
		c.isolation, c.isolationWarning = iso, why
		if why != "" {
			log.Warn("sandboxes run under runc, not gVisor", "why", why)
		} else {
			log.Info("sandbox isolation", "isolation", iso)
		}
		rt, closeFn = d, func() { d.Close() }
	default:
		return nil, nil, nil, nil, fmt.Errorf("unknown runtime %q", c.Runtime)
	}
	return forgetful{rt, pool}, rt, pool, closeFn, nil
}
