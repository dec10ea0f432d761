package llmtest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/llm/openai"
)

// A reasoning model on OpenAI's Responses API: its encrypted reasoning comes
// back as the turn's state, and the next request must carry it.
func Example_responses() {
	srv, err := llmtest.Start(llmtest.Options{Turns: []llmtest.Turn{
		{Reasoning: "List the files first.", ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command":"ls"}`)}},
		{Text: "There is a README."},
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	p, err := openai.New(openai.Config{APIKey: "sk-demo", BaseURL: srv.OpenAIBaseURL(), API: openai.APIResponses})
	if err != nil {
		log.Fatal(err)
	}
	req := &llm.Request{
		Model:    "gpt-5-mini",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "What is here?"}},
		Tools:    []llm.Tool{{Name: "bash", InputSchema: []byte(`{"type":"object","properties":{"command":{"type":"string"}}}`)}},
	}
	res, err := p.Complete(context.Background(), req)
	if err != nil {
		log.Fatal(err)
	}
	c := res.ToolCalls[0]
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: res.ToolCalls, Reasoning: res.Reasoning},
		llm.Message{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: c.ID, Name: c.Name, Output: "README.md"}}})
	res, err = p.Complete(context.Background(), req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
	fmt.Println(srv.Requests()[1].InputItems)
	// Output:
	// There is a README.
	// [message user reasoning rs_llmtest_1 function_call fc_llmtest_1_1 function_call_output call_1_1]
}
