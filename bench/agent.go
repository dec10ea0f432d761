package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/toolbox"
)

// Agent measures the LLM agent's own cost per step: a scripted in-process
// model answers at once with a bash call (finish at the last step), tools
// run in a local sandbox, and every event and progress update is written to
// a SQLite store as the runner does. A step's overhead is its wall time less
// the model call and the tool call: building the prompt window, the recall
// index, masking, persistence.
func (s *Suite) Agent(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "dd-bench-agent-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, filepath.Join(dir, "bench.db"), nil)
	if err != nil {
		return err
	}
	defer store.Close()
	rt, err := local.New(local.Options{Root: filepath.Join(dir, "rt"), ServerID: "bench"})
	if err != nil {
		return err
	}
	defer rt.Close()
	runs := max(1, min(s.opts.N, 3))
	var overhead []time.Duration
	for i := range runs {
		s.report.Logf("agent: run %d/%d of %d steps", i+1, runs, s.opts.AgentSteps)
		o, err := AgentStepOverhead(ctx, store, rt, s.opts.AgentSteps)
		if err != nil {
			return fmt.Errorf("agent run: %w", err)
		}
		overhead = append(overhead, o...)
	}
	s.report.Add(Result{Name: "agent.step_overhead", Unit: "ms", Dist: dist(overhead),
		Note: fmt.Sprintf("%d runs of %d steps; wall time per step less model and tool time; SQLite store, local sandbox", runs, s.opts.AgentSteps)})
	return nil
}

// AgentStepOverhead runs one scripted job of steps steps against store and
// rt and returns each step's overhead (see Suite.Agent). The agent package's
// BenchmarkStepOverhead uses it too.
func AgentStepOverhead(ctx context.Context, store *sqlite.Store, rt *local.Runtime, steps int) ([]time.Duration, error) {
	id := "bench-" + drydock.RandomHex(6)
	if err := store.CreateJob(ctx, &drydock.Job{ID: id, JobSpec: drydock.JobSpec{Task: "bench", MaxSteps: steps + 1}}); err != nil {
		return nil, err
	}
	job, err := store.ClaimJob(ctx, "bench", time.Hour)
	if err != nil || job == nil {
		return nil, fmt.Errorf("claim: %v %w", job, err)
	}
	sb, err := rt.Create(ctx, drydock.SandboxSpec{JobID: id})
	if err != nil {
		return nil, err
	}
	defer rt.Destroy(context.WithoutCancel(ctx), sb.ID)
	tc := toolbox.New(sb.Endpoint, sb.Token)
	err = tc.WaitReady(ctx)
	tc.Close()
	if err != nil {
		return nil, err
	}
	model := &scriptedModel{steps: steps}
	// The server passes its environment for masking; so does the bench,
	// so that the masking it measures is the server's.
	a, err := agent.New(agent.Config{LLM: model, Model: "claude-sonnet-4-5", Environ: os.Environ()}, nil)
	if err != nil {
		return nil, err
	}
	em := &timedEmitter{store: store, jobID: id}
	var ends []time.Time
	_, err = a.Run(ctx, &drydock.AgentRun{Job: job, Sandbox: sb, Events: em,
		Progress: func(ctx context.Context, n int, u drydock.Usage) error {
			err := store.UpdateProgress(ctx, id, "bench", drydock.JobProgress{Steps: n, Usage: u})
			ends = append(ends, time.Now())
			return err
		}})
	if err != nil {
		return nil, err
	}
	if len(model.calls) != steps || len(em.tools) != steps || len(ends) != steps {
		return nil, fmt.Errorf("%d model calls, %d tool calls, %d steps; want %d each", len(model.calls), len(em.tools), len(ends), steps)
	}
	out := make([]time.Duration, steps)
	for k := range steps {
		m, t := model.calls[k], em.tools[k]
		out[k] = ends[k].Sub(m.start) - m.end.Sub(m.start) - t.end.Sub(t.start)
	}
	return out, nil
}

type span struct{ start, end time.Time }

// scriptedModel answers at once: a bash call each step, finish at the last.
type scriptedModel struct {
	steps int
	mu    sync.Mutex
	calls []span
}

func (m *scriptedModel) Name() string { return "scripted" }

func (m *scriptedModel) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	start := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.calls) + 1
	c := llm.ToolCall{ID: fmt.Sprintf("call_%d", n), Name: "bash", Input: json.RawMessage(fmt.Sprintf(`{"command":"echo step %d"}`, n))}
	if n >= m.steps {
		c = llm.ToolCall{ID: "call_end", Name: "finish", Input: json.RawMessage(`{"summary":"done"}`)}
	}
	m.calls = append(m.calls, span{start, time.Now()})
	return &llm.Response{Text: "Next.", ToolCalls: []llm.ToolCall{c}, StopReason: llm.StopToolUse, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 20}}, nil
}

// timedEmitter stores events as the runner does and times each tool call
// from its tool_call event to its observation.
type timedEmitter struct {
	store *sqlite.Store
	jobID string
	mu    sync.Mutex
	tools []span
}

func (e *timedEmitter) Emit(ctx context.Context, typ drydock.EventType, data any) error {
	now := time.Now()
	e.mu.Lock()
	switch typ {
	case drydock.EventToolCall:
		e.tools = append(e.tools, span{start: now})
	case drydock.EventObservation:
		if len(e.tools) > 0 {
			e.tools[len(e.tools)-1].end = now
		}
	}
	e.mu.Unlock()
	return e.store.AppendEvent(ctx, drydock.NewEvent(e.jobID, typ, data))
}
