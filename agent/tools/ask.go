package tools

import (
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/drydockhq/drydock/llm"
)

// NameAskUser is the tool of interactive jobs: like the
// other tool names, a contract with the model and the UI.
const NameAskUser = "ask_user"

// maxQuestionBytes bounds a question: it becomes the job's waiting_for,
// which every job read carries.
const maxQuestionBytes = 4096

var askUserDef = llm.Tool{
	Name:        NameAskUser,
	Description: `Ask the user a question and wait for the answer. Use it only when you cannot go on without a decision or information only the user has (a choice between designs, a missing credential, an unclear requirement), not for progress reports. The user's answer arrives as a message in the conversation; if nobody answers in time, the reply says so and you should go on with your best judgement.`,
	InputSchema: schema(`{"type":"object","properties":{
"question":{"type":"string","description":"The question, complete and short enough to answer in a sentence or two."}},
"required":["question"]}`),
}

type askUser struct{ env *Env }

func (a *askUser) run(ctx context.Context, input json.RawMessage) Result {
	var in struct {
		Question string `json:"question"`
	}
	if err := decode(input, &in); err != nil {
		return errorf("ask_user: %v", err)
	}
	q := strings.TrimSpace(in.Question)
	if q == "" {
		return errorf("ask_user: question is required")
	}
	if len(q) > maxQuestionBytes {
		return errorf("ask_user: the question is %d bytes; keep it under %d", len(q), maxQuestionBytes)
	}
	if !utf8.ValidString(q) || strings.ContainsRune(q, 0) {
		q = strings.ReplaceAll(strings.ToValidUTF8(q, "\uFFFD"), "\x00", "\uFFFD")
	}
	if a.env.Ask == nil {
		return errorf("ask_user: nobody can be asked in this job; decide yourself and state your assumption in the summary")
	}
	out, err := a.env.Ask(ctx, q)
	if err != nil {
		return failure("ask_user", err)
	}
	return Result{Output: out}
}
