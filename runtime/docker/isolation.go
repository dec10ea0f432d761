package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
)

// Isolation modes (drydock server --isolation).
const (
	// ModeAuto runs sandboxes under gVisor when the engine offers it, and
	// under runc otherwise.
	ModeAuto = "auto"
	// ModeGVisor runs them under gVisor or not at all.
	ModeGVisor = "gvisor"
	// ModeRunc runs them under the engine's default runtime.
	ModeRunc = "runc"
)

// podmanHow says how Podman's sandboxes get gVisor.
const podmanHow = "the Podman service's default runtime is not gVisor (Podman's Docker-compatible API takes no runtime per container): register runsc in containers.conf ([engine.runtimes] runsc = [\"/path/to/runsc\"], with --host-uds=all --network=none through a wrapper script) and set [engine] runtime = \"runsc\", then restart the service"

// noLoopback says why a gVisor without loopback will not do.
const noLoopback = "a container under gVisor has no loopback interface, which toolboxd's egress forwarder and the code kernel need (runsc's default --network=sandbox takes the interfaces of the network namespace Podman makes for network \"none\", and finds none it can use): run runsc with --network=none, which gives each sandbox its own loopback and nothing else"

// gvisorRuntime is the name gVisor's runsc is registered under.
const gvisorRuntime = "runsc"

// probeTimeout bounds the container ResolveIsolation starts.
const probeTimeout = time.Minute

// ResolveIsolation decides what the runtime's sandboxes run under for
// mode, checks it with a container of image, and returns the isolation
// (drydock.IsolationGVisor or IsolationRunc) and, when auto fell back to
// runc, why. gVisor is checked by what the container's kernel says, not by
// the engine's configuration alone: Podman lists runtimes it has not got,
// and its Docker-compatible API ignores a container's runtime, so there
// only the service's default runtime counts.
func (r *Runtime) ResolveIsolation(ctx context.Context, mode, image string) (isolation, fallback string, err error) {
	switch mode {
	case ModeRunc, ModeAuto, ModeGVisor:
	default:
		return "", "", drydock.Errorf(drydock.EINVALID, "isolation %q is not one of auto, gvisor, runc", mode)
	}
	podman, err := r.isPodman(ctx)
	if err != nil {
		return "", "", err
	}
	info, err := r.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "", "", engineError("engine info", err)
	}
	// Podman runs every container under its service's default runtime.
	podmanGVisor := podman && info.Info.DefaultRuntime == gvisorRuntime
	want := ""
	if mode == ModeRunc {
		r.setIsolation("", drydock.IsolationRunc)
		if podmanGVisor {
			// runc cannot be had there: say what the sandboxes get.
			if ok, _ := r.probeGVisor(ctx, image, ""); ok {
				r.setIsolation("", drydock.IsolationGVisor)
			}
		}
		return r.isolation, "", nil
	}
	if podman && !podmanGVisor {
		return r.fallback(mode, podmanHow)
	}
	if !podman {
		if _, ok := info.Info.Runtimes[gvisorRuntime]; !ok {
			why := "the Docker engine has no runtime named runsc: build gVisor's runsc statically (CGO_ENABLED=0 go install gvisor.dev/gvisor/runsc@VERSION), register it in the daemon's daemon.json as {\"runtimes\": {\"runsc\": {\"path\": \"/path/to/runsc\", \"runtimeArgs\": [\"--host-uds=all\"]}}} and reload dockerd (SIGHUP)"
			return r.fallback(mode, why)
		}
		want = gvisorRuntime
	}
	ok, err := r.probeGVisor(ctx, image, want)
	switch {
	case errors.Is(err, errNoLoopback) && podman:
		// Every container there runs under it: runc is no way out.
		return "", "", drydock.Errorf(drydock.EINVALID, "--isolation %s: the Podman service runs its containers under gVisor, but %s", mode, noLoopback)
	case errors.Is(err, errNoLoopback):
		return r.fallback(mode, noLoopback)
	case err != nil:
		return r.fallback(mode, "a container under gVisor did not run: "+drydock.ErrorMessage(err))
	case !ok && podman:
		return r.fallback(mode, podmanHow)
	case !ok:
		return r.fallback(mode, "a container asked to run under runsc did not report gVisor's kernel")
	}
	r.setIsolation(want, drydock.IsolationGVisor)
	return drydock.IsolationGVisor, "", nil
}

// fallback ends ResolveIsolation without gVisor: an error for ModeGVisor,
// runc with the reason for auto.
func (r *Runtime) fallback(mode, why string) (string, string, error) {
	if mode == ModeGVisor {
		return "", "", drydock.Errorf(drydock.EINVALID, "--isolation gvisor: %s", why)
	}
	r.setIsolation("", drydock.IsolationRunc)
	return drydock.IsolationRunc, why, nil
}

func (r *Runtime) setIsolation(ociRuntime, isolation string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opts.OCIRuntime, r.isolation = ociRuntime, isolation
}

// errNoLoopback: the probe ran under gVisor but found no loopback.
var errNoLoopback = errors.New("no loopback interface under gVisor")

// probeGVisor runs a container of image under ociRuntime ("" for the
// engine's default) and reports whether its kernel is gVisor's: its
// /proc/version names it. (Its syslog, gVisor's boot log, names it too, but
// a seccomp profile may refuse syslog.) Under
// gVisor the container must also have a loopback interface
// (errNoLoopback).
func (r *Runtime) probeGVisor(ctx context.Context, image, ociRuntime string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	name := "drydock-isolation-probe-" + drydock.RandomHex(6)
	cfg := &container.Config{
		Image:      image,
		Entrypoint: []string{"/bin/sh", "-c", "grep -qi gvisor /proc/version || exit 1; grep -q '^ *lo:' /proc/net/dev || exit 3"},
		Labels:     map[string]string{"drydock.probe": "isolation"},
	}
	hc := &container.HostConfig{NetworkMode: "none", Runtime: ociRuntime, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"}}
	if _, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name, Config: cfg, HostConfig: hc}); err != nil {
		if cerrdefs.IsNotFound(err) {
			return false, drydock.Errorf(drydock.EINVALID, "sandbox image %s not found (build it with drydock image build)", image)
		}
		return false, engineError("create the isolation probe", err)
	}
	defer func() {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer rcancel()
		_, _ = r.cli.ContainerRemove(rctx, name, client.ContainerRemoveOptions{Force: true})
	}()
	wait := r.cli.ContainerWait(ctx, name, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := r.cli.ContainerStart(ctx, name, client.ContainerStartOptions{}); err != nil {
		return false, engineError("start the isolation probe", err)
	}
	select {
	case res := <-wait.Result:
		if res.Error != nil {
			return false, fmt.Errorf("isolation probe: %s", res.Error.Message)
		}
		if res.StatusCode == 3 {
			return true, errNoLoopback
		}
		return res.StatusCode == 0, nil
	case err := <-wait.Error:
		return false, engineError("wait for the isolation probe", err)
	}
}

// hostLimits are what the engine is asked to enforce on the container.
type hostLimits struct {
	memory, pids int64
	// nproc is RLIMIT_NPROC for the sandbox's user, 0 for none.
	nproc int64
}

// gVisor's own processes on the host: the sentry (its kernel), the gofer
// and, with the systrap platform, a stub process per address space. They
// live in the container's cgroup, so the engine's limits bind them too.
const (
	// gvisorMemoryOverhead is the sentry's and gofer's memory on top of
	// the sandbox's: 50-80 MiB measured, and page tables that grow with it
	// (gvisorLimits adds a share of the limit for those and for what an
	// allocation gains before toolboxd's guard ends it).
	gvisorMemoryOverhead = 128 << 20
	// gvisorPidsOverhead covers the sentry's and gofer's threads (about 30
	// idle, more under load).
	gvisorPidsOverhead = 256
)

// gvisorLimits moves the sandbox's limits inside gVisor and leaves the
// engine a ceiling for the whole of it, sentry included.
//
// Under runc the host kernel charges the sandbox's processes and kills the
// largest when memory runs out. Under gVisor the host sees only the sentry
// and its stubs: a fork bomb that reached the pids limit left the sentry
// unable to start a thread (the Go runtime's fatal "failed to create new OS
// thread": the container exited), and a memory bomb made the host's OOM
// killer end the sentry, so the whole sandbox. So:
//   - processes: RLIMIT_NPROC, which gVisor's kernel counts per sandbox
//     (under runc it would count uid 1000 across the host), refuses the
//     agent's clone with EAGAIN at the sandbox's limit, threads included as
//     with the pids cgroup; the engine's pids limit is a ceiling four times
//     that plus the sentry's own (systrap's stubs follow the processes);
//   - memory: gVisor enforces no memory cgroup inside, so toolboxd does
//     (EnvMemoryLimit: it ends the largest process as the kernel's OOM
//     killer would, never itself); the engine's limit adds the sentry's
//     overhead and room for what an allocation gains while the guard
//     polls (a growing bomb outran 144 MiB of it on a loaded machine), so
//     that toolboxd acts first.
func gvisorLimits(res drydock.Resources) hostLimits {
	return hostLimits{
		memory: res.MemoryBytes + gvisorMemoryOverhead + max(res.MemoryBytes/4, 128<<20),
		pids:   4*res.PidsLimit + gvisorPidsOverhead,
		nproc:  res.PidsLimit,
	}
}
