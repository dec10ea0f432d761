package agent_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/runtime/local"
)

// printer is an event log that prints what the agent appends.
type printer struct{}

func (printer) Emit(_ context.Context, typ drydock.EventType, _ any) error {
	fmt.Println(typ)
	return nil
}

// The agent on a job in a (local, unisolated) sandbox, driven by a scripted
// model through the OpenAI provider: one shell command, then finish.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agent-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	rt, err := local.New(local.Options{Root: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	sb, err := rt.Create(ctx, drydock.SandboxSpec{JobID: "job-1"})
	if err != nil {
		log.Fatal(err)
	}

	model, err := llmtest.Start(llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command":"echo 'hello world' > hello.txt"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary":"Wrote hello.txt."}`)}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()

	a, err := agent.New(agent.Config{Provider: agent.ProviderOpenAI, Model: "gpt-4.1", APIKey: "sk-demo", BaseURL: model.OpenAIBaseURL()}, nil)
	if err != nil {
		log.Fatal(err)
	}
	out, err := a.Run(ctx, &drydock.AgentRun{
		Job:      &drydock.Job{ID: "job-1", JobSpec: drydock.JobSpec{Task: "Create hello.txt containing hello world."}},
		Sandbox:  sb,
		Events:   printer{},
		Progress: func(context.Context, int, drydock.Usage) error { return nil },
	})
	if err != nil {
		log.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(rt.Workspace(sb.ID), "hello.txt"))
	fmt.Printf("%s\n%s", out.Summary, data)
	// Output:
	// model
	// usage
	// tool_call
	// observation
	// model
	// usage
	// tool_call
	// observation
	// Wrote hello.txt.
	// hello world
}
