package memory_test

import (
	"context"
	"fmt"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/memory"
	"github.com/drydockhq/drydock/agent/transcript"
)

// Recall over a job's log: the passage that holds the words, labelled with
// its step.
func ExampleHistory() {
	events := []*drydock.Event{
		bash(1, "call_1", "make"),
		drydock.NewEvent("job-1", drydock.EventObservation, transcript.Observation{Step: 1, ID: "call_1", Name: "bash", Output: "cc -o app main.c\nmain.c:12: undefined reference to `parse_config'"}),
		bash(2, "call_2", "ls"),
		drydock.NewEvent("job-1", drydock.EventObservation, transcript.Observation{Step: 2, ID: "call_2", Name: "bash", Output: "Makefile main.c config.c"}),
	}
	h := memory.NewHistory(nil, "") // no sandbox: the log only
	out, _ := h.Recall(context.Background(), events, "undefined parse_config", 1, 0)
	fmt.Println(out)
	// Output:
	// The best 1 of 4 passages of the job's history for "undefined parse_config", best first:
	//
	// --- step 1, bash result ---
	// cc -o app main.c
	// main.c:12: undefined reference to `parse_config'
}
