package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// Sandbox measures cold starts on one engine: n sandboxes of profile made
// one after another, each timed from Create to toolboxd's core ready (and,
// for the desktop, to display and VNC ready), then the first Python result
// after that point; each sandbox is destroyed before the next.
func (s *Suite) Sandbox(ctx context.Context, e *engine, profile drydock.Profile) error {
	var create, core, usable, python []time.Duration
	for i := range s.opts.N {
		s.report.Logf("sandbox %s %s %d/%d", e.Name, profile, i+1, s.opts.N)
		ictx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		err := s.coldStart(ictx, e, profile, &create, &core, &usable, &python)
		cancel()
		if err != nil {
			return err
		}
	}
	s.report.Add(
		Result{Name: "sandbox.create", Engine: e.Name, Profile: string(profile), Unit: "ms", Dist: dist(create), Note: "the runtime's Create: container created and started"},
		Result{Name: "sandbox.ready", Engine: e.Name, Profile: string(profile), Mode: "core", Unit: "ms", Dist: dist(core), Note: "Create → toolboxd reports files and shell ready"},
	)
	if profile == drydock.ProfileDesktop {
		s.report.Add(Result{Name: "sandbox.ready", Engine: e.Name, Profile: string(profile), Mode: "vnc", Unit: "ms", Dist: dist(usable), Note: "Create → display and VNC ready"})
	}
	s.report.Add(Result{Name: "sandbox.first_python", Engine: e.Name, Profile: string(profile), Unit: "ms", Dist: dist(python), Note: "sandbox ready → first Python result (print(6*7))"})
	return nil
}

func (s *Suite) coldStart(ctx context.Context, e *engine, profile drydock.Profile, create, core, usable, python *[]time.Duration) (err error) {
	t0 := time.Now()
	sb, err := e.create(ctx, profile)
	if err != nil {
		return err
	}
	defer func() {
		if derr := e.destroy(ctx, sb); err == nil {
			err = derr
		}
	}()
	*create = append(*create, time.Since(t0))
	if err := sb.tc.WaitReady(ctx); err != nil {
		return fmt.Errorf("%s sandbox on %s: %w", profile, e.Name, err)
	}
	*core = append(*core, time.Since(t0))
	if c := readyComponents(profile); len(c) > 0 {
		if err := sb.tc.WaitReady(ctx, c...); err != nil {
			return fmt.Errorf("%s sandbox on %s: %w", profile, e.Name, err)
		}
		*usable = append(*usable, time.Since(t0))
	}
	t1 := time.Now()
	if err := firstPython(ctx, sb.tc); err != nil {
		return fmt.Errorf("%s sandbox on %s: %w", profile, e.Name, err)
	}
	*python = append(*python, time.Since(t1))
	return nil
}

// firstPython runs print(6*7) in the sandbox's kernel and checks the answer.
func firstPython(ctx context.Context, tc *toolbox.Client) error {
	res, err := tc.RunCode(ctx, toolbox.CodeRequest{Language: "python", Code: "print(6*7)"})
	if err != nil {
		return fmt.Errorf("python: %w", err)
	}
	if res.Error || len(res.Outputs) == 0 || !strings.Contains(res.Outputs[0].Text, "42") {
		return fmt.Errorf("python printed %+v, want 42", res)
	}
	return nil
}

func dist(d []time.Duration) *Dist {
	x := Durations(d)
	return &x
}
