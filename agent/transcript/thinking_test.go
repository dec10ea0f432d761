package transcript_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
)

// thoughtStep is a step whose turn thought, with its signature.
func (j *job) thoughtStep(n int, output string) llm.Thinking {
	id := fmt.Sprintf("call_%d", n)
	th := llm.Thinking{Text: fmt.Sprintf("Plan for step %d: %s", n, strings.Repeat("reason ", 30)), Signature: fmt.Sprintf("sig-%d", n)}
	j.emit(nil, drydock.EventModel, transcript.ModelTurn{Step: n, Reasoning: llm.ThinkingReasoning([]llm.Thinking{th}), Text: fmt.Sprintf("Step %d.", n),
		ToolCalls: []llm.ToolCall{{ID: id, Name: "bash", Input: json.RawMessage(fmt.Sprintf(`{"command":"run %d"}`, n))}}})
	j.emit(nil, drydock.EventObservation, transcript.Observation{Step: n, ID: id, Name: "bash", Output: output})
	return th
}

// lastThinking checks that the prompt's last assistant turn carries th
// unchanged, and that no masked turn carries any.
func lastThinking(t *testing.T, step int, p *transcript.Prompt, th llm.Thinking) {
	t.Helper()
	a := p.Messages[len(p.Messages)-2]
	if got := a.Reasoning.Thinking(); a.Role != llm.RoleAssistant || len(got) != 1 || got[0] != th {
		t.Fatalf("step %d: last turn's thinking %+v; want %+v unchanged", step, got, th)
	}
}

// The provider refuses a tool-use loop whose last turn lost or changed its
// thinking: masking, condensing and cutting to fit must leave it whole.
func TestWindowKeepsTheLastTurnsThinking(t *testing.T) {
	t.Parallel()
	j := newJob(t)
	const budget = 6000
	w := j.window(budget, 10)
	for i := 1; i <= 80; i++ {
		th := j.thoughtStep(i, fmt.Sprintf("step %d says %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 40)))
		p, err := w.Prompt(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		valid(t, p.Messages)
		lastThinking(t, i, p, th)
		// Masked turns drop their thinking (not required, and it costs
		// context); whole ones keep it.
		for k, m := range p.Messages {
			if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
				continue
			}
			masked := strings.HasPrefix(p.Messages[k+1].ToolResults[0].Output, "[Older output hidden")
			if masked && m.Reasoning != nil {
				t.Fatalf("step %d: masked turn %d kept its thinking", i, k)
			}
		}
	}
	if len(j.condensations()) == 0 || len(j.notes(transcript.KindMask)) == 0 {
		t.Fatalf("%d condensations, %d masks; the test must exercise both", len(j.condensations()), len(j.notes(transcript.KindMask)))
	}

	// Cut to fit: the last step's texts are clipped, its thinking is not.
	j2 := newJob(t)
	w2 := j2.window(5000, 20)
	for i := 1; i <= 3; i++ {
		j2.thoughtStep(i, "small")
	}
	th := j2.thoughtStep(4, "HEAD "+strings.Repeat("many different words here ", 4000)+" TAIL")
	p, err := w2.Prompt(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Messages[len(p.Messages)-1].ToolResults[0].Output, "bytes cut to fit") {
		t.Fatalf("the last step was not cut: the test must exercise the cut")
	}
	lastThinking(t, 4, p, th)

	// Rebuilt from the log (a restart), the whole conversation has it.
	msgs := transcript.Messages(j2.events, transcript.Options{Task: "t"})
	if got := msgs[len(msgs)-2].Reasoning.Thinking(); len(got) != 1 || got[0] != th {
		t.Errorf("rebuilt conversation's last thinking %+v", got)
	}
}
