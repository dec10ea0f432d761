package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/drydockhq/drydock/llm"
)

var recallDef = llm.Tool{
	Name:        NameRecall,
	Description: `Search everything that happened in this job so far: your earlier messages, tool calls and their full outputs (the whole saved outputs of long commands too), errors and notes, including parts no longer shown in the conversation. Returns the best-matching passages, each labelled with its step. Use distinctive words (file names, error messages, function names, values).`,
	InputSchema: schema(`{"type":"object","properties":{
"query":{"type":"string","description":"Words to look for."}},
"required":["query"]}`),
}

type recall struct{ env *Env }

func (r *recall) run(ctx context.Context, input json.RawMessage) Result {
	var in struct {
		Query string `json:"query"`
	}
	if err := decode(input, &in); err != nil {
		return errorf("recall: %v", err)
	}
	if strings.TrimSpace(in.Query) == "" || strings.IndexFunc(in.Query, isWordRune) < 0 {
		return errorf("recall: query is required (words to look for)")
	}
	if r.env.Recall == nil {
		return errorf("recall: this run has no history to search")
	}
	out, err := r.env.Recall(ctx, in.Query)
	if err != nil {
		return failure("recall", err)
	}
	return Result{Output: out}
}
