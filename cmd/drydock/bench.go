package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/bench"
)

// BenchCmd groups the benchmarks; the measuring lives in package bench.
type BenchCmd struct {
	All       BenchAllCmd       `cmd:"" name:"all" help:"Every measure below, engines one after another (what make bench runs)."`
	API       BenchAPICmd       `cmd:"" name:"api" help:"Schedule throughput and status latency of a server's HTTP API."`
	Sandbox   BenchSandboxCmd   `cmd:"" name:"sandbox" help:"Sandbox cold start per profile and engine, and the first Python result after ready."`
	Tools     BenchToolsCmd     `cmd:"" name:"tools" help:"Tool round trip through toolboxd beside the engine's exec (docker exec) in the same sandbox."`
	Agent     BenchAgentCmd     `cmd:"" name:"agent" help:"The agent's overhead per step (scripted model, local sandbox, SQLite)."`
	Archive   BenchArchiveCmd   `cmd:"" name:"archive" help:"Workspace archive throughput (tar, gzip, artifact store)."`
	Density   BenchDensityCmd   `cmd:"" name:"density" help:"How many idle desktop sandboxes fit, and their memory each."`
	Schedule  BenchScheduleCmd  `cmd:"" name:"schedule" help:"POST /schedule → first tool call through a real server, cold and warm."`
	Isolation BenchIsolationCmd `cmd:"" name:"isolation" help:"runc beside gVisor on one engine: cold start, warm claim, tool round trip, first Python result, idle memory and density, with the ratio."`
}

// benchFlags are shared by every bench subcommand.
type benchFlags struct {
	Runtime        string        `default:"docker" enum:"docker" help:"Sandbox runtime measured: docker (Docker and Podman engines)."`
	DockerHost     []string      `name:"docker-host" help:"Engine socket to measure; repeat it for Docker and Podman (default: DOCKER_HOST or the engine's default)."`
	ImageHeadless  string        `default:"drydock-sandbox:headless" help:"Headless sandbox image."`
	ImageDesktop   string        `default:"drydock-sandbox:desktop" help:"Desktop sandbox image."`
	Profile        []string      `help:"Profiles whose cold start is measured (default: headless and desktop)." enum:"headless,desktop"`
	N              int           `short:"n" default:"10" help:"Iterations of measures that make a sandbox or a job each time."`
	RoundTrips     int           `default:"200" help:"Rounds of tool round trips."`
	ArchiveMiB     int           `name:"archive-mib" default:"64" help:"Workspace size archived, in MiB."`
	DensityMax     int           `default:"40" help:"Most idle desktop sandboxes started by the density measure."`
	DensityReserve int           `name:"density-reserve-mib" default:"3072" help:"Stop starting sandboxes when the host's MemAvailable falls below this many MiB."`
	DensitySettle  time.Duration `default:"10s" help:"How long the sandboxes idle before their memory is read."`
	IsolationIdle  int           `name:"isolation-idle" default:"3" help:"isolation: idle headless sandboxes per isolation held at once to read their memory (at most 20)."`
	AgentSteps     int           `default:"200" help:"Steps of each scripted agent run."`
	Bin            string        `help:"drydock binary whose server is measured (default: this one)." type:"path"`
	Target         []string      `help:"api: URL of a server to measure (with the global --token if it needs one); repeat it for replicas. None starts a private API-only server."`
	Duration       time.Duration `default:"10s" help:"api: how long to schedule jobs."`
	Concurrency    int           `default:"32" help:"api: concurrent clients."`
	Statuses       int           `default:"20000" help:"api: GET /status requests to time."`
	JSON           string        `help:"Write the results as JSON to this file." type:"path"`
}

type (
	BenchAllCmd       struct{ benchFlags }
	BenchAPICmd       struct{ benchFlags }
	BenchSandboxCmd   struct{ benchFlags }
	BenchToolsCmd     struct{ benchFlags }
	BenchAgentCmd     struct{ benchFlags }
	BenchArchiveCmd   struct{ benchFlags }
	BenchDensityCmd   struct{ benchFlags }
	BenchScheduleCmd  struct{ benchFlags }
	BenchIsolationCmd struct{ benchFlags }
)

func (c *BenchAllCmd) Run(g *Globals) error       { return c.run(g, bench.Measures...) }
func (c *BenchAPICmd) Run(g *Globals) error       { return c.run(g, "api") }
func (c *BenchSandboxCmd) Run(g *Globals) error   { return c.run(g, "sandbox") }
func (c *BenchToolsCmd) Run(g *Globals) error     { return c.run(g, "tools") }
func (c *BenchAgentCmd) Run(g *Globals) error     { return c.run(g, "agent") }
func (c *BenchArchiveCmd) Run(g *Globals) error   { return c.run(g, "archive") }
func (c *BenchDensityCmd) Run(g *Globals) error   { return c.run(g, "density") }
func (c *BenchScheduleCmd) Run(g *Globals) error  { return c.run(g, "schedule") }
func (c *BenchIsolationCmd) Run(g *Globals) error { return c.run(g, "isolation") }

func (c *benchFlags) run(g *Globals, measures ...string) error {
	bin := c.Bin
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find this binary: %w", err)
		}
		bin = exe
	}
	var profiles []drydock.Profile
	for _, p := range c.Profile {
		profiles = append(profiles, drydock.Profile(p))
	}
	s, err := bench.New(bench.Options{
		Hosts:             c.DockerHost,
		Images:            map[drydock.Profile]string{drydock.ProfileHeadless: c.ImageHeadless, drydock.ProfileDesktop: c.ImageDesktop},
		Profiles:          profiles,
		N:                 c.N,
		RoundTrips:        c.RoundTrips,
		Bin:               bin,
		ArchiveMiB:        c.ArchiveMiB,
		DensityMax:        c.DensityMax,
		DensityReserveMiB: c.DensityReserve,
		DensitySettle:     c.DensitySettle,
		IsolationIdle:     c.IsolationIdle,
		AgentSteps:        c.AgentSteps,
		API:               bench.APIOptions{Targets: c.Target, Token: g.Token, Duration: c.Duration, Concurrency: c.Concurrency, Statuses: c.Statuses},
		Log:               g.Err,
	}, version, "drydock "+strings.Join(os.Args[1:], " "))
	if err != nil {
		return err
	}
	// Ctrl-C ends the measures; each destroys its sandboxes and servers
	// before returning, and what was measured is still written.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(g.Err, "bench: machine: %s\n", s.Report().Machine)
	runErr := s.Run(ctx, measures...)
	s.Report().Markdown(g.Out)
	if c.JSON != "" {
		if err := s.Report().WriteJSON(c.JSON); err != nil {
			return errors.Join(runErr, err)
		}
		fmt.Fprintf(g.Err, "bench: results written to %s\n", c.JSON)
	}
	return runErr
}
