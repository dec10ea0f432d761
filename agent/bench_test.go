package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/toolbox"
)

// scripted is an in-process model: it answers at once with a bash call, and
// with finish at the last step, timing its own calls.
type scripted struct {
	steps int
	mu    sync.Mutex
	n     int
	spans []span // model calls
}

type span struct{ start, end time.Time }

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	start := time.Now()
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	c := llm.ToolCall{ID: fmt.Sprintf("call_%d", n), Name: "bash", Input: json.RawMessage(fmt.Sprintf(`{"command":"echo step %d"}`, n))}
	if n >= s.steps {
		c = llm.ToolCall{ID: "call_end", Name: "finish", Input: json.RawMessage(`{"summary":"done"}`)}
	}
	res := &llm.Response{Text: "Next.", ToolCalls: []llm.ToolCall{c}, StopReason: llm.StopToolUse, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 20}}
	s.mu.Lock()
	s.spans = append(s.spans, span{start, time.Now()})
	s.mu.Unlock()
	return res, nil
}

// storeEmitter writes events to the store as the runner does, noting when
// each tool call starts and its observation arrives.
type storeEmitter struct {
	store *sqlite.Store
	jobID string
	mu    sync.Mutex
	tools []span
}

func (e *storeEmitter) Emit(ctx context.Context, typ drydock.EventType, data any) error {
	now := time.Now()
	e.mu.Lock()
	switch typ {
	case drydock.EventToolCall:
		e.tools = append(e.tools, span{start: now})
	case drydock.EventObservation:
		e.tools[len(e.tools)-1].end = now
	}
	e.mu.Unlock()
	return e.store.AppendEvent(ctx, drydock.NewEvent(e.jobID, typ, data))
}

// The agent's own cost per step, persistence included, in a 200-step run:
// each step's wall time minus the model call and the tool call (a bash
// command in a local sandbox). Reported as p50 and p99 per step.
func BenchmarkStepOverhead(b *testing.B) {
	const steps = 200
	ctx := b.Context()
	dir := b.TempDir()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	rt, err := local.New(local.Options{Root: filepath.Join(dir, "rt"), ServerID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	var overheads []time.Duration
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("job-bench-%d", i)
		if err := store.CreateJob(ctx, &drydock.Job{ID: id, JobSpec: drydock.JobSpec{Task: "bench", MaxSteps: steps + 1}}); err != nil {
			b.Fatal(err)
		}
		j, err := store.ClaimJob(ctx, "bench-owner", time.Hour)
		if err != nil || j == nil {
			b.Fatalf("claim: %v %v", j, err)
		}
		sb, err := rt.Create(ctx, drydock.SandboxSpec{JobID: id})
		if err != nil {
			b.Fatal(err)
		}
		box := toolbox.New(sb.Endpoint, sb.Token)
		if err := box.WaitReady(ctx); err != nil {
			b.Fatal(err)
		}
		box.Close()
		model := &scripted{steps: steps}
		a, err := agent.New(agent.Config{LLM: model, Model: "claude-sonnet-4-5"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		em := &storeEmitter{store: store, jobID: id}
		var ends []time.Time
		_, err = a.Run(ctx, &drydock.AgentRun{Job: j, Sandbox: sb, Events: em,
			Progress: func(ctx context.Context, n int, u drydock.Usage) error {
				err := store.UpdateProgress(ctx, id, "bench-owner", drydock.JobProgress{Steps: n, Usage: u})
				ends = append(ends, time.Now())
				return err
			}})
		if err != nil {
			b.Fatal(err)
		}
		if len(model.spans) != steps || len(em.tools) != steps || len(ends) != steps {
			b.Fatalf("%d model calls, %d tool calls, %d steps", len(model.spans), len(em.tools), len(ends))
		}
		for k := range steps {
			wall := ends[k].Sub(model.spans[k].start)
			overheads = append(overheads, wall-model.spans[k].end.Sub(model.spans[k].start)-em.tools[k].end.Sub(em.tools[k].start))
		}
		rt.Destroy(ctx, sb.ID)
	}
	slices.Sort(overheads)
	b.ReportMetric(float64(overheads[len(overheads)/2].Microseconds())/1000, "ms/step-p50")
	b.ReportMetric(float64(overheads[len(overheads)*99/100].Microseconds())/1000, "ms/step-p99")
}
