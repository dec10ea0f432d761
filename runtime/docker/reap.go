package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/drydockhq/drydock"
)

// orphanAge is how old a state directory without a container must be before
// PruneStateDirs removes it: younger ones may belong to a Create in progress.
const orphanAge = 5 * time.Minute

// engineFile names, in a sandbox's state directory, the engine that runs its
// container, so that runtimes on different engines sharing one state
// directory never take each other's containers for gone.
const engineFile = "engine"

// PruneStateDirs removes the state directories (sockets, the sandbox's
// token and VNC password) of this engine's sandboxes whose container is
// gone without a Destroy: removed by hand, or an engine wiped under us. The
// runner's reaper decides which containers to destroy; this only sweeps
// what such containers left. It returns how many directories it removed.
func (r *Runtime) PruneStateDirs(ctx context.Context) (int, error) {
	entries, err := os.ReadDir(r.stateDir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read state dir: %w", err)
	}
	// One list for the common case, a directory whose container is there;
	// Get decides for the rest.
	list, err := r.List(ctx, nil)
	if err != nil {
		return 0, err
	}
	live := make(map[string]bool, len(list))
	for _, sb := range list {
		live[sb.ID] = true
	}
	host := r.cli.DaemonHost()
	n := 0
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !idPattern.MatchString(e.Name()) || live[e.Name()] {
			continue
		}
		dir := filepath.Join(r.stateDir, e.Name())
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < orphanAge {
			continue
		}
		if owner, err := os.ReadFile(filepath.Join(dir, engineFile)); err != nil || string(owner) != host {
			continue
		}
		if _, err := r.Get(ctx, e.Name()); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove orphan state dir %s: %w", e.Name(), err))
			continue
		}
		r.log.Info("orphan sandbox dir removed", "sandbox", e.Name())
		n++
	}
	return n, errors.Join(errs...)
}
