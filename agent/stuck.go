package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/drydockhq/drydock/agent/transcript"
)

// stuck notices a run that goes nowhere: the same action with the same
// result again and again, tool errors in a row, or turns without any tool
// call. Each pattern first earns the model a warning, then ends the run.
type stuck struct {
	limit int // repeats before the warning

	lastSig string
	repeats int
	errors  int // consecutive steps whose every call failed
	empty   int // consecutive turns without a tool call
}

// verdict is what the detector says after a step.
type verdict struct {
	warn string // a notice for the model
	fail string // the run's error
}

// observe takes one step: the model's turn and the observations of its
// calls.
func (s *stuck) observe(turn transcript.ModelTurn, obs []transcript.Observation) verdict {
	if len(turn.ToolCalls) == 0 {
		s.lastSig, s.repeats, s.errors = "", 0, 0
		s.empty++
		switch {
		case s.empty >= s.limit:
			return verdict{fail: fmt.Sprintf("the model stopped using its tools: %d turns in a row without a tool call (it must call finish to end the task)", s.empty)}
		default:
			return verdict{warn: "You replied without calling a tool. Nobody reads or answers messages while you work: keep working with the tools, and call `finish` with a summary when the task is done (or cannot be done)."}
		}
	}
	s.empty = 0

	sig := signature(turn, obs)
	if sig == s.lastSig {
		s.repeats++
	} else {
		s.lastSig, s.repeats = sig, 1
	}
	failed := len(obs) > 0
	for _, o := range obs {
		if !o.IsError {
			failed = false
		}
	}
	if failed {
		s.errors++
	} else {
		s.errors = 0
	}

	switch {
	case s.repeats >= s.limit+2:
		return verdict{fail: fmt.Sprintf("the agent is stuck: it repeated the same action with the same result %d times", s.repeats)}
	case s.errors >= 3*s.limit:
		return verdict{fail: fmt.Sprintf("the agent is stuck: %d steps in a row ended in tool errors", s.errors)}
	case s.repeats == s.limit:
		return verdict{warn: fmt.Sprintf("You have made the same tool call with the same result %d times in a row. Repeating it will not change the result: step back, look at the problem differently, and try another approach.", s.repeats)}
	case s.errors == 2*s.limit:
		return verdict{warn: fmt.Sprintf("Your last %d steps all ended in errors. Stop and re-read the error messages; check your assumptions (paths, tool parameters, what is installed) before trying again, and change your approach.", s.errors)}
	}
	return verdict{}
}

// signature identifies a step by its calls and their results, ignoring
// call ids (which differ every time).
func signature(turn transcript.ModelTurn, obs []transcript.Observation) string {
	h := sha256.New()
	for _, c := range turn.ToolCalls {
		fmt.Fprintf(h, "%s\x00%s\x00", c.Name, c.Input)
	}
	for _, o := range obs {
		fmt.Fprintf(h, "%s\x00%t\x00%s\x00", o.Name, o.IsError, o.Output)
	}
	return hex.EncodeToString(h.Sum(nil))
}
