package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
)

func turn(id, name, input string) transcript.ModelTurn {
	return transcript.ModelTurn{ToolCalls: []llm.ToolCall{{ID: id, Name: name, Input: json.RawMessage(input)}}}
}

func TestStuckRepeats(t *testing.T) {
	t.Parallel()
	s := &stuck{limit: 3}
	var got []string
	for i := range 5 {
		v := s.observe(turn(fmt.Sprint("call_", i), "bash", `{"command":"ls"}`), []transcript.Observation{{Name: "bash", Output: "a.txt"}})
		got = append(got, fmt.Sprintf("%t/%t", v.warn != "", v.fail != ""))
	}
	if strings.Join(got, " ") != "false/false false/false true/false false/false false/true" {
		t.Errorf("verdicts %v; want a warning at 3 and the end at 5", got)
	}
}

func TestStuckRepeatsResetOnChange(t *testing.T) {
	t.Parallel()
	s := &stuck{limit: 3}
	for i := range 10 {
		// Same action, different result each time: progress (e.g. polling).
		v := s.observe(turn("c", "bash", `{"command":"cat progress"}`), []transcript.Observation{{Name: "bash", Output: fmt.Sprint(i)}})
		if v.warn != "" || v.fail != "" {
			t.Fatalf("step %d: %+v", i, v)
		}
	}
}

func TestStuckErrors(t *testing.T) {
	t.Parallel()
	s := &stuck{limit: 3}
	var warnAt, failAt int
	for i := 1; i <= 9; i++ {
		v := s.observe(turn("c", "bash", fmt.Sprintf(`{"command":"try %d"}`, i)), []transcript.Observation{{Name: "bash", Output: "nope", IsError: true}})
		if v.warn != "" && warnAt == 0 {
			warnAt = i
		}
		if v.fail != "" {
			failAt = i
			break
		}
	}
	if warnAt != 6 || failAt != 9 {
		t.Errorf("warned at %d, failed at %d; want 6 and 9", warnAt, failAt)
	}
	// One success in between starts the count again.
	s = &stuck{limit: 3}
	for i := range 20 {
		obs := []transcript.Observation{{Name: "bash", Output: "nope", IsError: i%4 != 0}}
		if v := s.observe(turn("c", "bash", fmt.Sprintf(`{"command":"%d"}`, i)), obs); v.fail != "" {
			t.Fatalf("failed at %d despite successes", i)
		}
	}
}

func TestStuckEmptyTurns(t *testing.T) {
	t.Parallel()
	s := &stuck{limit: 3}
	empty := transcript.ModelTurn{Text: "Done, I think."}
	if v := s.observe(empty, nil); v.warn == "" || v.fail != "" {
		t.Errorf("first empty turn: %+v", v)
	}
	s.observe(turn("c", "bash", `{}`), []transcript.Observation{{Output: "ok"}}) // work resets it
	s.observe(empty, nil)
	s.observe(empty, nil)
	if v := s.observe(empty, nil); v.fail == "" {
		t.Errorf("third empty turn in a row did not end the run")
	}
}
