package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/tools"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/runtime/docker"
	localrt "github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/toolbox"
)

// ReplayCmd re-runs a recorded job's tool calls in a fresh sandbox, for
// debugging: does the same call still give the same observation?
type ReplayCmd struct {
	Trajectory string        `arg:"" optional:"" help:"Trajectory JSON (from GET /v1/jobs/{id}/trajectory), or - for standard input."`
	Job        string        `help:"Fetch the trajectory of this job from the server (--url, --token) instead of reading a file."`
	Runtime    string        `default:"docker" enum:"docker,local" help:"Where to create the sandbox: docker (Docker or Podman socket) or local (a host directory with NO isolation: the calls run as you, on this machine)."`
	DockerHost string        `env:"DOCKER_HOST" help:"Docker or Podman API socket (default: the engine's default)."`
	Image      string        `help:"Sandbox image (default: drydock-sandbox:<profile>)."`
	Profile    string        `enum:",headless,desktop" default:"" help:"Sandbox profile (default: the job's)."`
	Workspace  string        `default:"/workspace" help:"The workspace path the recorded calls name; paths under it are mapped to the new sandbox's workspace."`
	Seed       string        `placeholder:"DIR|FILE" help:"Put these files in the new sandbox's workspace before the calls run, as the job's began: a directory (packed with its .git; what its .gitignore files name is left out) or a tar or tar.gz archive, e.g. a checkout of a repository job's commit, or the parent's archive of a follow-up (drydock download PARENT)."`
	DataDir    string        `help:"Directory for --runtime local sandboxes (default: a temporary directory, removed afterwards unless --keep)."`
	Keep       bool          `help:"Keep the sandbox afterwards and print how to reach it."`
	Timeout    time.Duration `default:"1h" help:"Longest the whole replay may take."`
	JSON       bool          `name:"json" help:"Print the report as one JSON document."`
}

// Help is the long help of `drydock replay --help`.
func (c *ReplayCmd) Help() string {
	return `Reads a trajectory (a file, - for standard input, or --job ID from the server), creates a fresh
sandbox, re-runs every recorded tool call in order through the agent's own tools, and prints for
each whether its output matches the recorded observation: exactly, or once volatile parts (times,
durations, uuids, addresses, pids) are masked. finish and recall calls are not run: they have no
effect on the sandbox. Images are counted, not compared. The sandbox is destroyed afterwards unless
--keep is given.

The calls run with the recorded inputs, so a replay does what the job did (use it on trajectories
you trust). With --runtime local nothing is isolated, and absolute /workspace paths in shell
commands do not exist on the host; the editor's paths are mapped.

The exit status is 1 when a call differs from the recording.`
}

// Replay results of one step.
const (
	replayMatch      = "match"      // the same output, byte for byte
	replayNormalised = "normalised" // the same once volatile parts are masked
	replayDiffers    = "differs"
	replaySkipped    = "skipped"    // not run: no effect on the sandbox
	replayUnrecorded = "unrecorded" // run, but there is nothing to compare with
)

// replayObs is one side of a comparison.
type replayObs struct {
	Output  string `json:"output"`
	IsError bool   `json:"is_error"`
	Images  int    `json:"images,omitempty"`
}

// replayStep is the report of one tool call.
type replayStep struct {
	Step     int             `json:"step"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Result   string          `json:"result"`
	Reason   string          `json:"reason,omitempty"`
	Recorded *replayObs      `json:"recorded,omitempty"`
	Replayed *replayObs      `json:"replayed,omitempty"`
	Millis   int64           `json:"duration_ms"`
}

// replaySandbox says where the replay ran and how to reach it when kept.
type replaySandbox struct {
	ID        string   `json:"id"`
	Runtime   string   `json:"runtime"`
	Profile   string   `json:"profile"`
	Workspace string   `json:"workspace,omitempty"` // host directory (local runtime)
	Kept      bool     `json:"kept"`
	Reach     []string `json:"reach,omitempty"` // commands to reach and remove it
}

// replayReport is the --json output.
type replayReport struct {
	JobID      string         `json:"job_id"`
	Task       string         `json:"task"`
	Sandbox    *replaySandbox `json:"sandbox"`
	Steps      []*replayStep  `json:"steps"`
	Match      int            `json:"match"`
	Normalised int            `json:"normalised"`
	Differs    int            `json:"differs"`
	Skipped    int            `json:"skipped"`
	Unrecorded int            `json:"unrecorded"`
}

func (c *ReplayCmd) Run(g *Globals) error {
	if (c.Trajectory == "") == (c.Job == "") {
		return errors.New("give a trajectory file (or - for standard input), or --job ID to fetch one from the server")
	}
	ctx, _, stop := g.signalContext()
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()

	seed, err := c.seed()
	if err != nil {
		return err
	}
	tr, err := c.load(ctx, g)
	if err != nil {
		return err
	}
	if seed == nil {
		if from := startedFrom(tr); from != "" {
			fmt.Fprintf(g.errw(), "warning: job %s started from %s, and its calls ran there; this replay starts from an empty workspace (give --seed DIR|FILE to start from those files)\n", safe(tr.Job.ID), safe(from))
		}
	}
	steps := recordedCalls(tr.Events)
	profile := drydock.Profile(c.Profile)
	if profile == "" {
		profile = tr.Job.Profile
	}
	if profile == "" {
		profile = drydock.ProfileHeadless
	}

	rt, cleanup, err := c.runtime(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	spec := drydock.SandboxSpec{
		JobID:   "replay-" + tr.Job.ID,
		Image:   c.Image,
		Profile: profile,
		Labels: map[string]string{
			drydock.LabelManaged: "true",
			drydock.LabelJob:     "replay-" + tr.Job.ID,
			drydock.LabelServer:  "drydock-replay",
			"drydock.replay-of":  tr.Job.ID,
		},
	}
	sb, err := rt.Create(ctx, spec)
	if err != nil {
		return fmt.Errorf("create a %s sandbox: %w", rt.Name(), err)
	}
	report := &replayReport{JobID: tr.Job.ID, Task: tr.Job.Task, Sandbox: &replaySandbox{ID: sb.ID, Runtime: rt.Name(), Profile: string(profile), Kept: c.Keep}}
	if l, ok := rt.(*localrt.Runtime); ok {
		report.Sandbox.Workspace = l.Workspace(sb.ID)
	}
	defer func() {
		if c.Keep {
			if report.Sandbox.Reach == nil {
				// The replay failed before its report: say where the
				// sandbox is all the same.
				fmt.Fprintf(g.errw(), "drydock: the sandbox %s is kept; reach it with:\n", safe(sb.ID))
				for _, l := range c.reach(sb, report.Sandbox.Workspace) {
					fmt.Fprintln(g.errw(), "  "+safe(l))
				}
			}
			return
		}
		// Destroy even after Ctrl-C or the timeout.
		dctx, done := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer done()
		if err := rt.Destroy(dctx, sb.ID); err != nil {
			fmt.Fprintf(g.errw(), "drydock: destroy sandbox %s: %s\n", safe(sb.ID), safe(err.Error()))
		}
	}()

	box := toolbox.New(sb.Endpoint, sb.Token)
	defer box.Close()
	info, err := c.ready(ctx, g, box, steps)
	if err != nil {
		return err
	}
	if seed != nil {
		rc, err := seed()
		if err != nil {
			return fmt.Errorf("--seed: %w", err)
		}
		res, err := box.UploadTar(ctx, ".", rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("--seed: putting %s in the sandbox's workspace: %w", safe(c.Seed), err)
		}
		if !c.JSON {
			fmt.Fprintf(g.out(), "Seeded the workspace with %d files from %s.\n", res.Files, safe(c.Seed))
		}
	}
	set := tools.New(tools.Env{
		Box:       box,
		Workspace: c.Workspace,
		Desktop:   info.Desktop || profile == drydock.ProfileDesktop,
		Log:       slog.New(slog.DiscardHandler),
	})

	if !c.JSON {
		where := ""
		if report.Sandbox.Workspace != "" {
			where = ", workspace " + report.Sandbox.Workspace
		}
		fmt.Fprintf(g.out(), "Replaying %d tool calls of job %s in a fresh %s %s sandbox %s%s.\n", len(steps), safe(tr.Job.ID), rt.Name(), safe(string(profile)), safe(sb.ID), safe(where))
	}
	for _, s := range steps {
		c.replay(ctx, set, s)
		report.add(s.report)
		if !c.JSON {
			printStep(g.out(), s.report)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if c.Keep {
		report.Sandbox.Reach = c.reach(sb, report.Sandbox.Workspace)
	}
	if c.JSON {
		if err := writeJSON(g.out(), report); err != nil {
			return err
		}
	} else {
		printSummary(g.out(), report)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("replay stopped after %d of %d calls: %w", len(report.Steps), len(steps), err)
	}
	if report.Differs > 0 {
		return fmt.Errorf("%d of %d replayed calls differ from the recording", report.Differs, len(steps))
	}
	return nil
}

// load reads the trajectory from the file, standard input or the server.
func (c *ReplayCmd) load(ctx context.Context, g *Globals) (*drydock.Trajectory, error) {
	var (
		r    io.Reader
		name string
	)
	switch {
	case c.Job != "":
		body, err := g.Client().Trajectory(ctx, c.Job)
		if err != nil {
			return nil, g.explain(err, c.Job)
		}
		defer body.Close()
		r, name = body, "the trajectory of job "+c.Job
	case c.Trajectory == "-":
		r, name = g.in(), "standard input"
	default:
		f, err := os.Open(c.Trajectory)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r, name = f, c.Trajectory
	}
	var tr drydock.Trajectory
	if err := json.NewDecoder(r).Decode(&tr); err != nil {
		return nil, fmt.Errorf("read %s: %w (a trajectory is the JSON of GET /v1/jobs/{id}/trajectory)", name, err)
	}
	if tr.Format != drydock.TrajectoryFormat {
		return nil, fmt.Errorf("%s is not a %s trajectory (format %q)", name, drydock.TrajectoryFormat, tr.Format)
	}
	if tr.Job == nil {
		return nil, fmt.Errorf("%s has no job", name)
	}
	return &tr, nil
}

// runtime builds the runtime the sandbox is created in, and what to do
// when the replay is over.
func (c *ReplayCmd) runtime(ctx context.Context) (drydock.Runtime, func(), error) {
	switch c.Runtime {
	case "local":
		dir, owned := c.DataDir, false
		if dir == "" {
			d, err := os.MkdirTemp("", "drydock-replay-")
			if err != nil {
				return nil, nil, err
			}
			dir, owned = d, true
		}
		l, err := localrt.New(localrt.Options{Root: filepath.Join(dir, "sandboxes"), ServerID: "drydock-replay"})
		if err != nil {
			return nil, nil, fmt.Errorf("local runtime: %w", err)
		}
		return l, func() {
			l.Close()
			if owned && !c.Keep {
				os.RemoveAll(dir)
			}
		}, nil
	default:
		d, err := docker.New(docker.Options{Host: c.DockerHost, ServerID: "drydock-replay"})
		if err != nil {
			return nil, nil, fmt.Errorf("docker runtime: %w", err)
		}
		if _, err := d.List(ctx, map[string]string{drydock.LabelServer: "drydock-replay"}); err != nil {
			d.Close()
			return nil, nil, fmt.Errorf("cannot reach the container engine (%s): %w; start Docker or Podman, or set --docker-host / DOCKER_HOST (or use --runtime local)", c.DockerHost, err)
		}
		return d, func() { d.Close() }, nil
	}
}

// ready waits for the sandbox's toolbox, then for the services of it that
// the recorded calls need. A service the sandbox lacks or that does not
// come up is no reason to stop: the calls that need it fail, and say why,
// as they would have for the agent.
func (c *ReplayCmd) ready(ctx context.Context, g *Globals, box *toolbox.Client, steps []*recordedCall) (*toolbox.Info, error) {
	rctx, done := context.WithTimeout(ctx, 2*time.Minute)
	defer done()
	if err := box.WaitReady(rctx); err != nil {
		return nil, fmt.Errorf("the sandbox's toolbox did not become ready: %w", err)
	}
	info, err := box.Info(rctx)
	if err != nil {
		return nil, fmt.Errorf("the sandbox's toolbox: %w", err)
	}
	var components []string
	for _, s := range steps {
		switch s.call.Name {
		case tools.NameComputer:
			if info.Desktop && !slices.Contains(components, "display") {
				components = append(components, "display")
			}
		case tools.NameCode:
			var in struct {
				Language string `json:"language"`
			}
			if info.Code && json.Unmarshal(s.call.Input, &in) == nil && strings.HasPrefix(strings.ToLower(in.Language), "py") && !slices.Contains(components, "kernel") {
				components = append(components, "kernel")
			}
		}
	}
	if len(components) > 0 {
		if err := box.WaitReady(rctx, components...); err != nil {
			fmt.Fprintf(g.errw(), "drydock: the sandbox's %s did not become ready (%s); the calls that need it may fail\n", strings.Join(components, " and "), safe(drydock.ErrorMessage(err)))
		}
	}
	return info, nil
}

// reach says how to get into a kept sandbox and how to remove it.
func (c *ReplayCmd) reach(sb *drydock.Sandbox, workspace string) []string {
	if c.Runtime == "local" {
		return []string{
			"cd " + workspace,
			"rm -rf " + filepath.Dir(workspace) + "  # to remove it",
		}
	}
	cli := "docker"
	if c.DockerHost != "" {
		cli += " --host " + c.DockerHost
	}
	out := []string{
		fmt.Sprintf("%s exec -it --user agent --workdir %s %s bash", cli, c.Workspace, sb.ID),
		fmt.Sprintf("%s rm -f %s  # to remove it", cli, sb.ID),
	}
	// The runtime keeps the sandbox's socket and secrets in a state
	// directory named after it (<state>/<id>/toolbox/<socket>).
	if d := filepath.Dir(filepath.Dir(sb.Endpoint.Address)); sb.Endpoint.Network == "unix" && filepath.Base(d) == sb.ID {
		out[1] += ", then rm -rf " + d
	}
	return out
}

// recordedCall is a tool call of the trajectory and what it returned.
type recordedCall struct {
	call   transcript.ToolCall
	obs    *transcript.Observation
	report *replayStep
}

// recordedCalls pairs the tool_call events with their observations, in the
// order the agent ran them. Trajectories without tool_call events take the
// calls from the model turns.
func recordedCalls(events []*drydock.Event) []*recordedCall {
	var calls []*recordedCall
	byID := map[string]*recordedCall{}
	hasCallEvents := false
	for _, e := range events {
		if e.Type == drydock.EventToolCall {
			hasCallEvents = true
			break
		}
	}
	for _, e := range events {
		switch e.Type {
		case drydock.EventToolCall:
			var tc transcript.ToolCall
			if json.Unmarshal(e.Data, &tc) == nil {
				rc := &recordedCall{call: tc}
				calls = append(calls, rc)
				byID[tc.ID] = rc
			}
		case drydock.EventModel:
			var t transcript.ModelTurn
			if hasCallEvents || json.Unmarshal(e.Data, &t) != nil {
				continue
			}
			for _, c := range t.ToolCalls {
				rc := &recordedCall{call: transcript.ToolCall{Step: t.Step, ID: c.ID, Name: c.Name, Input: c.Input}}
				calls = append(calls, rc)
				byID[c.ID] = rc
			}
		case drydock.EventObservation:
			var o transcript.Observation
			if json.Unmarshal(e.Data, &o) == nil {
				if rc := byID[o.ID]; rc != nil && rc.obs == nil {
					rc.obs = &o
				}
			}
		}
	}
	return calls
}

// replay runs one recorded call and compares what it returns.
func (c *ReplayCmd) replay(ctx context.Context, set *tools.Set, rc *recordedCall) {
	s := &replayStep{Step: rc.call.Step, ID: rc.call.ID, Name: rc.call.Name, Input: rc.call.Input}
	rc.report = s
	if rc.obs != nil && !rc.obs.Interrupted {
		s.Recorded = &replayObs{Output: rc.obs.Output, IsError: rc.obs.IsError, Images: len(rc.obs.Images)}
	}
	switch rc.call.Name {
	case tools.NameFinish:
		s.Result, s.Reason = replaySkipped, "finish ends the job and has no effect on the sandbox"
		return
	case tools.NameRecall:
		s.Result, s.Reason = replaySkipped, "recall searches the job's history and has no effect on the sandbox"
		return
	case tools.NameAskUser:
		s.Result, s.Reason = replaySkipped, "ask_user waits for a person and has no effect on the sandbox"
		return
	}
	t0 := time.Now()
	res := set.Run(ctx, llm.ToolCall{ID: rc.call.ID, Name: rc.call.Name, Input: rc.call.Input})
	s.Millis = time.Since(t0).Milliseconds()
	s.Replayed = &replayObs{Output: res.Output, IsError: res.IsError, Images: len(res.Images)}
	switch {
	case ctx.Err() != nil:
		s.Result, s.Reason = replayUnrecorded, "the replay was stopped during this call"
	case rc.obs == nil:
		s.Result, s.Reason = replayUnrecorded, "the recording has no observation of this call (the job ended during it)"
	case rc.obs.Interrupted:
		s.Result, s.Reason = replayUnrecorded, "the recorded call was interrupted by an orchestrator restart; its effect is unknown"
	default:
		s.Result, s.Reason = compareObservation(rc.obs, res)
	}
}

// compareObservation compares a recorded observation with a new result:
// exactly, then with volatile parts masked on both sides. A recorded
// output that the agent cut in the middle matches when the new output
// starts and ends the same way.
func compareObservation(rec *transcript.Observation, res tools.Result) (result, reason string) {
	if rec.IsError != res.IsError {
		return replayDiffers, fmt.Sprintf("recorded is_error=%v, replayed is_error=%v: %s", rec.IsError, res.IsError, truncate(firstLine(res.Output), 120))
	}
	if len(rec.Images) != len(res.Images) {
		return replayDiffers, fmt.Sprintf("recorded %d image(s), replayed %d", len(rec.Images), len(res.Images))
	}
	recOut := stripAgentNotes(rec.Output)
	if rec.Truncated {
		if m := cutMark.FindStringIndex(recOut); m != nil {
			head, tail := recOut[:m[0]], recOut[m[1]:]
			if strings.HasPrefix(res.Output, head) && strings.HasSuffix(res.Output, tail) {
				return replayMatch, "the recorded output was cut; its head and tail match"
			}
			n := normalise(res.Output)
			if strings.HasPrefix(n, normalise(head)) && strings.HasSuffix(n, normalise(tail)) {
				return replayNormalised, "the recorded output was cut; its head and tail match once volatile parts are masked"
			}
			return replayDiffers, "the recorded output was cut; " + firstDifference(normalise(head), n)
		}
	}
	if recOut == res.Output {
		if len(res.Images) > 0 {
			return replayMatch, "images are not compared"
		}
		return replayMatch, ""
	}
	a, b := normalise(recOut), normalise(res.Output)
	if a == b {
		return replayNormalised, "equal once timings, times and ids are masked"
	}
	return replayDiffers, firstDifference(a, b)
}

// cutMark is the note the agent puts where it cut a long observation.
var cutMark = regexp.MustCompile(`\n\[\.\.\. \d+ bytes cut; [^\n]*\.\.\.\]\n`)

// agentNotes are lines the agent adds to an observation after the tool
// returned (about where it saved images); a bare tool result lacks them.
var agentNotes = regexp.MustCompile(`(?m)\n?^\[(The image was saved to [^\n]*|an image could not be saved: [^\n]*)\]$`)

func stripAgentNotes(s string) string { return agentNotes.ReplaceAllString(s, "") }

// volatile are the parts of outputs that differ from run to run without
// meaning a different result; normalise masks them, in this order.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?`), "<time>"},
	{regexp.MustCompile(`\b\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?\b`), "<clock>"},
	{regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<uuid>"},
	{regexp.MustCompile(`\b0x[0-9a-f]{6,16}\b`), "<addr>"},
	{regexp.MustCompile(`\b\d+m\d+(\.\d+)?s\b`), "<duration>"},
	{regexp.MustCompile(`\b\d+(\.\d+)?\s?(ns|µs|us|ms|s|sec|secs|seconds|min|minutes|h)\b`), "<duration>"},
	{regexp.MustCompile(`(?i)\b(duration|elapsed|time|took)(_ms|_s)?("?\s*[:=]\s*|\s+)\d+(\.\d+)?`), "$1$2$3<n>"},
	{regexp.MustCompile(`(?m)^\[\d+\] \d+$`), "[<job>] <pid>"},
	{regexp.MustCompile(`\b(pid|PID)[ =:]+\d+`), "$1 <pid>"},
	{regexp.MustCompile(`toolboxd-\d+`), "toolboxd-<n>"},
	{regexp.MustCompile(`[ \t]+\n`), "\n"},
}

// normalise masks the volatile parts of s and trailing blank space.
func normalise(s string) string {
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return strings.TrimRight(s, " \t\n")
}

// firstDifference names the first line where a and b differ.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: recorded %q, replayed %q", i+1, truncate(x, 120), truncate(y, 120))
		}
	}
	return "the outputs differ"
}

func (r *replayReport) add(s *replayStep) {
	r.Steps = append(r.Steps, s)
	switch s.Result {
	case replayMatch:
		r.Match++
	case replayNormalised:
		r.Normalised++
	case replayDiffers:
		r.Differs++
	case replaySkipped:
		r.Skipped++
	case replayUnrecorded:
		r.Unrecorded++
	}
}

// describe is a short human form of a call's input.
func describe(name string, input json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	var d string
	switch name {
	case tools.NameBash:
		d = str("command")
		if r, _ := in["restart"].(bool); r {
			d = "(restart) " + d
		}
	case tools.NameEditor:
		d = str("command") + " " + str("path")
	case tools.NameComputer:
		d = str("action")
		if c, ok := in["coordinate"].([]any); ok && len(c) == 2 {
			d += fmt.Sprintf(" %v,%v", c[0], c[1])
		}
		if t := str("text"); t != "" {
			d += fmt.Sprintf(" %q", t)
		}
	case tools.NameCode:
		d = str("language") + ": " + str("code")
	case tools.NameFinish:
		d = str("summary")
	case tools.NameRecall:
		d = str("query")
	case tools.NameAskUser:
		d = str("question")
	default:
		d = string(input)
	}
	return truncate(firstLine(d), 70)
}

func printStep(w io.Writer, s *replayStep) {
	label := map[string]string{
		replayMatch:      "match",
		replayNormalised: "match (normalised)",
		replayDiffers:    "DIFFERS",
		replaySkipped:    "skipped",
		replayUnrecorded: "not recorded",
	}[s.Result]
	fmt.Fprintf(w, "  step %-3d %-28s %-56s %s\n", s.Step, safe(s.Name), safe(describe(s.Name, s.Input)), label)
	if s.Reason != "" && s.Result != replayMatch {
		fmt.Fprintf(w, "           %s\n", safe(s.Reason))
	}
	if s.Result == replayUnrecorded && s.Replayed != nil {
		fmt.Fprintf(w, "           replayed: %s\n", safe(truncate(firstLine(s.Replayed.Output), 120)))
	}
}

func printSummary(w io.Writer, r *replayReport) {
	fmt.Fprintf(w, "%d calls: %d match (%d of them after normalising), %d differ, %d skipped, %d not recorded.\n",
		len(r.Steps), r.Match+r.Normalised, r.Normalised, r.Differs, r.Skipped, r.Unrecorded)
	if !r.Sandbox.Kept {
		fmt.Fprintln(w, "The sandbox was destroyed (keep it with --keep).")
		return
	}
	fmt.Fprintf(w, "The sandbox %s is kept. Reach it with:\n", safe(r.Sandbox.ID))
	for _, l := range r.Sandbox.Reach {
		fmt.Fprintln(w, "  "+safe(l))
	}
}
