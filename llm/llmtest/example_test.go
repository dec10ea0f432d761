package llmtest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/anthropic"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// A scripted model that asks for a tool call, then answers in text, reached
// through the unchanged Anthropic SDK; the server records what it was sent.
func Example() {
	srv, err := llmtest.Start(llmtest.Options{Turns: []llmtest.Turn{
		{Fault: llmtest.RateLimit}, // retried by the SDK
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command":"ls"}`)}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-demo", BaseURL: srv.AnthropicBaseURL()})
	if err != nil {
		log.Fatal(err)
	}
	res, err := p.Complete(context.Background(), &llm.Request{
		Model:    "claude-sonnet-4-5",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "What is here?"}},
		Tools:    []llm.Tool{{Name: "bash", InputSchema: []byte(`{"type":"object","properties":{"command":{"type":"string"}}}`)}},
	})
	if err != nil {
		log.Fatal(err)
	}
	c := res.ToolCalls[0]
	fmt.Println(res.StopReason, c.Name, string(c.Input))
	fmt.Println(len(srv.Requests()), "requests;", srv.Requests()[1].LastUser().Text)
	// Output:
	// tool_use bash {"command":"ls"}
	// 2 requests; What is here?
}
