package transcript_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/tokens"
)

// A Window keeps a growing log within a 5,000-token budget: whenever the
// prompt would exceed it, the oldest steps are folded into a summary by
// the model, recorded in the log as a condensation, and the prompt drops
// to about a third of the budget.
func ExampleWindow() {
	var events []*drydock.Event
	emit := func(_ context.Context, typ drydock.EventType, v any) error {
		events = append(events, drydock.NewEvent("job-1", typ, v))
		return nil
	}
	w := transcript.NewWindow(transcript.Config{
		Task:   "Your task:\n\nCount to sixty.",
		Meter:  tokens.NewMeter(tokens.For("openai", "gpt-4.1")),
		Budget: 5000,
		Events: func() []*drydock.Event { return events },
		Emit:   emit,
		Complete: func(_ context.Context, req *llm.Request) (*llm.Response, error) {
			return &llm.Response{Text: "Counted so far; nothing failed."}, nil
		},
	})
	ctx := context.Background()
	var p *transcript.Prompt
	for i := 1; i <= 60; i++ {
		id := fmt.Sprintf("call_%d", i)
		emit(ctx, drydock.EventModel, transcript.ModelTurn{Step: i, ToolCalls: []llm.ToolCall{{ID: id, Name: "bash", Input: json.RawMessage(`{"command":"seq 100"}`)}}})
		emit(ctx, drydock.EventObservation, transcript.Observation{Step: i, ID: id, Name: "bash", Output: strings.Repeat(fmt.Sprintf("%d\n", i), 100)})
		p, _ = w.Prompt(ctx)
	}
	for _, e := range events {
		if e.Type == drydock.EventCondensation {
			var c transcript.Condensation
			json.Unmarshal(e.Data, &c)
			fmt.Printf("condensation: steps %d to %d, %d tokens to %d\n", c.FromStep, c.ThroughStep, c.TokensBefore, c.TokensAfter)
		}
	}
	fmt.Println(p.Estimate <= 5000, strings.Contains(p.Messages[0].Text, "Counted so far"))
	// Output:
	// condensation: steps 1 to 13, 4774 tokens to 1721
	// condensation: steps 14 to 26, 4815 tokens to 1721
	// condensation: steps 27 to 39, 4815 tokens to 1721
	// condensation: steps 40 to 52, 4815 tokens to 1721
	// true true
}
