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
// Reap removes it: younger ones may belong to a Create in progress.
const orphanAge = 5 * time.Minute

// Reap destroys the managed sandboxes whose job keep rejects (finished or
// unknown jobs) and state directories whose container is gone. It returns the
// ids it destroyed; an error on one sandbox does not stop the others.
func (r *Runtime) Reap(ctx context.Context, keep func(jobID string) bool) ([]string, error) {
	list, err := r.List(ctx, nil)
	if err != nil {
		return nil, err
	}
	live := make(map[string]bool, len(list))
	var reaped []string
	var errs []error
	for _, sb := range list {
		live[sb.ID] = true
		if keep(sb.Labels[drydock.LabelJob]) {
			continue
		}
		if err := r.Destroy(ctx, sb.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		r.log.Info("sandbox reaped", "sandbox", sb.ID, "job", sb.Labels[drydock.LabelJob])
		reaped = append(reaped, sb.ID)
	}
	entries, err := os.ReadDir(r.stateDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("read state dir: %w", err))
	}
	for _, e := range entries {
		if !e.IsDir() || !idPattern.MatchString(e.Name()) || live[e.Name()] {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < orphanAge {
			continue
		}
		// A container may have appeared since List; Get is authoritative.
		if _, err := r.Get(ctx, e.Name()); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			continue
		}
		if err := os.RemoveAll(filepath.Join(r.stateDir, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("remove orphan state dir %s: %w", e.Name(), err))
			continue
		}
		r.log.Info("orphan sandbox dir removed", "sandbox", e.Name())
	}
	return reaped, errors.Join(errs...)
}
