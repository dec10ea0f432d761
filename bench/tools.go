package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// Tools measures `true` in one ready headless sandbox, round by round: in
// a toolboxd shell session, as a toolboxd one-shot process, toolboxd's
// health check, and through the engine's exec API (what `docker exec`
// does). Interleaving them puts the same load on each.
func (s *Suite) Tools(ctx context.Context, e *engine) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	return e.withReady(ctx, drydock.ProfileHeadless, func(sb *sandbox) error { return s.roundTrips(ctx, e, sb) })
}

func (s *Suite) roundTrips(ctx context.Context, e *engine, sb *sandbox) error {
	sess, err := sb.tc.CreateSession(ctx, toolbox.SessionRequest{})
	if err != nil {
		return fmt.Errorf("toolboxd session: %w", err)
	}
	// One warm-up round, so connection setup is not counted.
	if _, err := sb.tc.Run(ctx, sess.ID, toolbox.RunRequest{Command: "true"}); err != nil {
		return fmt.Errorf("toolboxd run: %w", err)
	}
	if _, err := e.engineExec(ctx, sb.ID, "true"); err != nil {
		return fmt.Errorf("%s exec: %w", e.Name, err)
	}
	var session, oneShot, health, engineExec, python []time.Duration
	timed := func(into *[]time.Duration, f func() error) error {
		t0 := time.Now()
		if err := f(); err != nil {
			return err
		}
		*into = append(*into, time.Since(t0))
		return nil
	}
	for i := range s.opts.RoundTrips {
		if i%50 == 0 {
			s.report.Logf("tools %s %d/%d", e.Name, i, s.opts.RoundTrips)
		}
		steps := []struct {
			into *[]time.Duration
			f    func() error
		}{
			{&session, func() error {
				r, err := sb.tc.Run(ctx, sess.ID, toolbox.RunRequest{Command: "true"})
				if err == nil && (r.Running || r.ExitCode != 0) {
					err = fmt.Errorf("session run: %+v", r)
				}
				return err
			}},
			{&oneShot, func() error {
				r, err := sb.tc.Exec(ctx, toolbox.ExecRequest{Args: []string{"true"}}, io.Discard, io.Discard)
				if err == nil && r.ExitCode != 0 {
					err = fmt.Errorf("exec: exit %d", r.ExitCode)
				}
				return err
			}},
			{&health, func() error { return sb.tc.Health(ctx) }},
			{&engineExec, func() error {
				code, err := e.engineExec(ctx, sb.ID, "true")
				if err == nil && code != 0 {
					err = fmt.Errorf("%s exec: exit %d", e.Name, code)
				}
				return err
			}},
			{&python, func() error {
				_, err := sb.tc.RunCode(ctx, toolbox.CodeRequest{Language: "python", Code: "x = 6*7"})
				return err
			}},
		}
		for _, st := range steps {
			if err := timed(st.into, st.f); err != nil {
				return fmt.Errorf("round trip on %s: %w", e.Name, err)
			}
		}
	}
	ses, eng := Durations(session), Durations(engineExec)
	s.report.Add(
		Result{Name: "tools.roundtrip", Engine: e.Name, Mode: "toolboxd-session", Unit: "ms", Dist: &ses, Note: "`true` in a persistent shell session"},
		Result{Name: "tools.roundtrip", Engine: e.Name, Mode: "toolboxd-exec", Unit: "ms", Dist: dist(oneShot), Note: "`true` as a one-shot process"},
		Result{Name: "tools.roundtrip", Engine: e.Name, Mode: "toolboxd-health", Unit: "ms", Dist: dist(health), Note: "GET /v1/health, the transport's floor"},
		Result{Name: "tools.roundtrip", Engine: e.Name, Mode: "toolboxd-python", Unit: "ms", Dist: dist(python), Note: "one statement in the resident Python kernel"},
		Result{Name: "tools.roundtrip", Engine: e.Name, Mode: e.Name + "-exec", Unit: "ms", Dist: &eng, Note: "`true` through the engine's exec API (create, attach, inspect), as `docker exec` does"},
	)
	if ses.P50 > 0 {
		s.report.Add(Result{Name: "tools.speedup", Engine: e.Name, Unit: "×", Value: ptr(round(eng.P50 / ses.P50)), Note: "engine exec p50 / toolboxd session p50, same sandbox, same run"})
	}
	return nil
}
