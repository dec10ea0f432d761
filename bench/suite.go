package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/drydockhq/drydock"
)

// Options configures a Suite.
type Options struct {
	// Hosts are the engines' addresses (Docker, Podman); empty means
	// DOCKER_HOST or the engine's default socket.
	Hosts []string
	// Images maps a profile to its sandbox image (default
	// drydock-sandbox:<profile>).
	Images map[drydock.Profile]string
	// Profiles whose cold start is measured (default both).
	Profiles []drydock.Profile
	// N is the number of iterations of the measures that make a sandbox or
	// a job each time.
	N int
	// RoundTrips is the number of rounds of the toolboxd and engine exec
	// round trips.
	RoundTrips int
	// Bin is the drydock binary the server measures start.
	Bin string
	// ArchiveMiB is the size of the archived workspace.
	ArchiveMiB int
	// DensityMax bounds the idle desktop sandboxes started;
	// DensityReserveMiB is the host MemAvailable below which no more are
	// started; DensitySettle is how long they idle before their memory is
	// read.
	DensityMax        int
	DensityReserveMiB int
	DensitySettle     time.Duration
	// IsolationIdle is how many idle sandboxes per isolation the isolation
	// measure holds at once to read their memory.
	IsolationIdle int
	// AgentSteps is the length of each scripted agent run.
	AgentSteps int
	API        APIOptions
	// Log receives progress lines.
	Log io.Writer
}

// Measures in the order "all" runs them: the cheap, engine-free ones first,
// density last since it fills the machine.
var Measures = []string{"api", "agent", "sandbox", "tools", "archive", "schedule", "isolation", "density"}

// engineMeasures need a container engine.
var engineMeasures = []string{"sandbox", "tools", "archive", "schedule", "isolation", "density"}

// Suite runs measures and collects their results in one Report.
type Suite struct {
	opts Options
	// serverID labels every sandbox the suite makes itself.
	serverID string
	report   *Report
	engines  []*engine
}

// New checks opts and prepares a suite whose report names version and
// command.
func New(opts Options, version, command string) (*Suite, error) {
	if opts.N < 1 {
		return nil, drydock.Errorf(drydock.EINVALID, "-n must be at least 1, got %d", opts.N)
	}
	if opts.RoundTrips < 1 || opts.ArchiveMiB < 1 || opts.DensityMax < 1 || opts.AgentSteps < 2 {
		return nil, drydock.Errorf(drydock.EINVALID, "round trips, archive size and density bound must be at least 1, agent steps at least 2")
	}
	if opts.IsolationIdle == 0 {
		opts.IsolationIdle = 3
	}
	if opts.IsolationIdle < 1 || opts.IsolationIdle > maxIsolationIdle {
		return nil, drydock.Errorf(drydock.EINVALID, "--isolation-idle must be between 1 and %d, got %d", maxIsolationIdle, opts.IsolationIdle)
	}
	if len(opts.Profiles) == 0 {
		opts.Profiles = []drydock.Profile{drydock.ProfileHeadless, drydock.ProfileDesktop}
	}
	for _, p := range opts.Profiles {
		if !p.Valid() {
			return nil, drydock.Errorf(drydock.EINVALID, "unknown profile %q (headless or desktop)", p)
		}
	}
	if len(opts.Hosts) == 0 {
		opts.Hosts = []string{""}
	}
	return &Suite{opts: opts, serverID: "bench-" + drydock.RandomHex(4), report: NewReport(version, command, opts.Log)}, nil
}

// Report is what the suite measured so far.
func (s *Suite) Report() *Report { return s.report }

// Run runs the named measures (see Measures). A measure that fails is
// recorded as failed and the others still run; the error returned joins
// the failures. Sandboxes a measure made are destroyed before it returns,
// also when ctx ends.
func (s *Suite) Run(ctx context.Context, measures ...string) error {
	for _, m := range measures {
		if !slices.Contains(Measures, m) {
			return drydock.Errorf(drydock.EINVALID, "unknown measure %q (one of %v)", m, Measures)
		}
	}
	defer s.report.Finish(Targets, measures)
	var errs []error
	fail := func(name, engine string, err error) {
		s.report.Fail(name, engine, "", err)
		errs = append(errs, fmt.Errorf("%s %s: %w", name, engine, err))
	}
	needEngines := false
	for _, m := range measures {
		needEngines = needEngines || slices.Contains(engineMeasures, m)
	}
	if needEngines {
		for _, h := range s.opts.Hosts {
			e, err := openEngine(ctx, h, s.serverID, s.opts.Images)
			if err != nil {
				return err
			}
			defer e.close()
			s.engines = append(s.engines, e)
			s.report.Machine.Engines = append(s.report.Machine.Engines, e.Engine)
		}
	}
	for _, m := range measures {
		if ctx.Err() != nil {
			break
		}
		switch m {
		case "api":
			if err := s.API(ctx); err != nil {
				fail("api", "", err)
			}
		case "agent":
			if err := s.Agent(ctx); err != nil {
				fail("agent", "", err)
			}
		default:
			for _, e := range s.engines {
				if err := s.engineMeasure(ctx, m, e); err != nil {
					fail(m, e.Name, err)
				}
			}
		}
	}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

func (s *Suite) engineMeasure(ctx context.Context, m string, e *engine) error {
	switch m {
	case "sandbox":
		for _, p := range s.opts.Profiles {
			if err := s.Sandbox(ctx, e, p); err != nil {
				return err
			}
		}
		return nil
	case "tools":
		return s.Tools(ctx, e)
	case "archive":
		return s.Archive(ctx, e)
	case "schedule":
		return s.Schedule(ctx, e)
	case "isolation":
		return s.Isolation(ctx, e)
	case "density":
		return s.Density(ctx, e)
	}
	return fmt.Errorf("unknown measure %q", m)
}
