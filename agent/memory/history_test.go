package memory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/memory"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/toolbox"
)

// sandbox returns a toolboxd client of a local sandbox and its workspace.
func sandbox(t testing.TB) (*toolbox.Client, string) {
	t.Helper()
	rt, err := local.New(local.Options{Root: t.TempDir(), ServerID: "memory-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sb, err := rt.Create(context.Background(), drydock.SandboxSpec{JobID: "job-1"})
	if err != nil {
		t.Fatal(err)
	}
	box := toolbox.New(sb.Endpoint, sb.Token)
	t.Cleanup(func() { box.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := box.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return box, rt.Workspace(sb.ID)
}

func ev(typ drydock.EventType, v any) *drydock.Event { return drydock.NewEvent("job-1", typ, v) }

func bash(step int, id, command string) *drydock.Event {
	return ev(drydock.EventModel, transcript.ModelTurn{Step: step, Text: "Running it.", ToolCalls: []llm.ToolCall{{ID: id, Name: "bash", Input: []byte(fmt.Sprintf(`{"command":%q}`, command))}}})
}

func TestHistoryIndexesTheLogAndSavedOutputs(t *testing.T) {
	t.Parallel()
	box, ws := sandbox(t)
	ctx := t.Context()
	// A long output the agent cut, saved whole; and one toolboxd saved.
	var whole strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&whole, "row %d ok\n", i)
		if i == 4321 {
			whole.WriteString("row 4321 checksum mismatch in shard-77\n")
		}
	}
	if err := box.WriteFile(ctx, ".drydock/outputs/step-0002-call_2.txt", []byte(whole.String())); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".drydock/outputs/cmd-9.log"), []byte("linker says: cannot find -lzeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	events := []*drydock.Event{
		ev(drydock.EventStatus, map[string]string{"status": "running"}),
		bash(1, "call_1", "echo the password is swordfish"),
		ev(drydock.EventObservation, transcript.Observation{Step: 1, ID: "call_1", Name: "bash", Output: "the password is swordfish"}),
		bash(2, "call_2", "./check"),
		ev(drydock.EventObservation, transcript.Observation{Step: 2, ID: "call_2", Name: "bash", Output: "row 0 ok\n[... cut ...]\nrow 4999 ok", Truncated: true, OutputPath: ".drydock/outputs/step-0002-call_2.txt"}),
		bash(3, "call_3", "make"),
		ev(drydock.EventObservation, transcript.Observation{Step: 3, ID: "call_3", Name: "bash", Output: "[Output cut: 10 bytes in all; the whole output is in " + ws + "/.drydock/outputs/cmd-9.log]", IsError: true}),
		ev(drydock.EventModel, transcript.ModelTurn{Step: 4, ToolCalls: []llm.ToolCall{{ID: "call_4", Name: "recall", Input: []byte(`{"query":"swordfish"}`)}}}),
		ev(drydock.EventObservation, transcript.Observation{Step: 4, ID: "call_4", Name: "recall", Output: "recall result mentioning swordfish"}),
		ev(drydock.EventLog, transcript.Notice{Level: "warn", Message: "Stop repeating the zebra command.", Notice: true, Step: 4}),
		ev(drydock.EventLog, map[string]any{"level": "info", "kind": "context_mask", "message": "swordfish outputs hidden"}),
		ev(drydock.EventError, map[string]string{"message": "the quota of widgets is spent"}),
	}
	h := memory.NewHistory(box, ".drydock/outputs")
	tests := []struct {
		query string
		want  []string // in the first passage, label included
	}{
		{"swordfish", []string{"step 1, bash result", "the password is swordfish"}},
		{"checksum mismatch shard", []string{"step 2, bash result, whole output in", "row 4321 checksum mismatch in shard-77", "lines "}},
		{"lzeta", []string{"step 3, bash result (error), whole output in", "cannot find -lzeta"}},
		{"zebra", []string{"note to you after step 4", "Stop repeating"}},
		{"widgets quota", []string{"note (error)", "quota of widgets"}},
	}
	for _, tt := range tests {
		out, err := h.Recall(ctx, events, tt.query, 5, 4000)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(strings.SplitN(out, "\n--- ", 3)[1], "\n--- ")
		for _, w := range tt.want {
			if !strings.Contains(first, w) {
				t.Errorf("recall %q: best passage lacks %q:\n%s", tt.query, w, out)
			}
		}
	}
	// Neither recall's own results nor the context manager's notes are found.
	out, _ := h.Recall(ctx, events, "swordfish", 5, 0)
	if strings.Count(out, "\n--- ") != 2 { // the turn and the result of step 1
		t.Errorf("swordfish found in:\n%s", out)
	}
	// New events and grown files are picked up.
	events = append(events, bash(5, "call_5", "echo quokka"))
	if err := os.WriteFile(filepath.Join(ws, ".drydock/outputs/cmd-9.log"), []byte("linker says: cannot find -lzeta\nand -lomega\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"quokka", "lomega"} {
		if out, _ := h.Recall(ctx, events, q, 5, 0); !strings.Contains(out, q) {
			t.Errorf("recall %q after the log grew:\n%s", q, out)
		}
	}
	// Without a sandbox the log alone is searched.
	if out, err := memory.NewHistory(nil, "").Recall(ctx, events, "swordfish lzeta", 5, 0); err != nil || strings.Contains(out, "-lzeta") || !strings.Contains(out, "swordfish") {
		t.Errorf("log only: %v\n%s", err, out)
	}
}

// Recall latency over a job of 1,000 steps (a model turn and a bash result
// each, 2,000 events with about 600 KB of outputs), the index already
// built: what a recall call costs beyond the first.
func BenchmarkRecall1000Steps(b *testing.B) {
	events := make([]*drydock.Event, 0, 2000)
	for i := 1; i <= 1000; i++ {
		id := fmt.Sprintf("call_%d", i)
		events = append(events, bash(i, id, fmt.Sprintf("go test ./pkg%d/...", i)),
			ev(drydock.EventObservation, transcript.Observation{Step: i, ID: id, Name: "bash",
				Output: strings.Repeat(fmt.Sprintf("ok  \tgithub.com/acme/pkg%d/sub\t0.%03ds\n", i, i%1000), 12)}))
	}
	h := memory.NewHistory(nil, "")
	ctx := context.Background()
	start := time.Now()
	if _, err := h.Recall(ctx, events, "warm up", 5, 0); err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		out, err := h.Recall(ctx, events, fmt.Sprintf("pkg%d sub", i%1000+1), 5, 6000)
		if err != nil || !strings.Contains(out, fmt.Sprintf("pkg%d/", i%1000+1)) {
			b.Fatalf("%v\n%s", err, out)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms/recall-p50")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "ms/recall-p95")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms/recall-p99")
	b.ReportMetric(float64(build.Microseconds())/1000, "ms/index-build")
}
