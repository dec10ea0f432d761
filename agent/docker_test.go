package agent_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/runtime/docker"
	"github.com/drydockhq/drydock/toolbox"
)

// requireDesktopSandbox starts a desktop sandbox from the real image on the
// test engine, or skips: DRYDOCK_TEST_DOCKER_HOST names the engine
// (scripts/testenv/docker-up.sh), DRYDOCK_TEST_IMAGE_DESKTOP the image
// (default drydock-sandbox:desktop, from drydock image build).
func requireDesktopSandbox(t *testing.T) *drydock.Sandbox {
	t.Helper()
	host := os.Getenv("DRYDOCK_TEST_DOCKER_HOST")
	if host == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST is not set: no engine for a real sandbox (scripts/testenv/docker-up.sh starts one)")
	}
	image := os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP")
	if image == "" {
		image = "drydock-sandbox:desktop"
	}
	state, err := os.MkdirTemp("", "dd-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	rt, err := docker.New(docker.Options{Host: host, ServerID: "agent-test", StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-agent-desktop", Image: image, Profile: drydock.ProfileDesktop})
	if err != nil {
		if drydock.ErrorCode(err) == drydock.ENOTFOUND {
			t.Skipf("image %s is not on the engine (drydock image build makes it): %v", image, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.Destroy(ctx, sb.ID); err != nil {
			t.Errorf("destroy sandbox: %v", err)
		}
	})
	box := toolbox.New(sb.Endpoint, sb.Token)
	defer box.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := box.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	ready, err := box.Ready(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"display", "kernel"} {
		if _, ok := ready.Component(c); !ok {
			t.Skipf("the image's toolboxd does not provide %s (an image built before toolboxd served it?)", c)
		}
	}
	if err := box.WaitReady(ctx, "display", "kernel"); err != nil {
		t.Fatal(err)
	}
	return sb
}

// In the real desktop sandbox: a screenshot reaches the model as an image,
// python state persists between execute_code calls, and a figure the code
// displays comes back as an image too.
func TestDesktopSandboxImagesAndKernel(t *testing.T) {
	t.Parallel()
	sb := requireDesktopSandbox(t)
	png64 := base64.StdEncoding.EncodeToString(llmtest.PNG)
	srv := llmtest.NewServer(t, llmtest.Options{APIKey: llmtest.TestKey, Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{call("computer", map[string]string{"action": "screenshot"})}},
		{ToolCalls: []llm.ToolCall{call("execute_code", map[string]string{"language": "python", "code": "x = 21"})}},
		{ToolCalls: []llm.ToolCall{call("execute_code", map[string]string{"language": "python",
			"code": "import base64\nfrom IPython.display import Image, display\ndisplay(Image(data=base64.b64decode('" + png64 + "')))\nprint(x * 2)"})}},
		finish("looked and computed"),
	}})
	a, err := agent.New(agent.Config{Provider: agent.ProviderAnthropic, Model: "claude-sonnet-4-5", APIKey: llmtest.TestKey, BaseURL: srv.AnthropicBaseURL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	j := job("Look at the screen, then compute.")
	j.Profile = drydock.ProfileDesktop
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	_, err = a.Run(ctx, &drydock.AgentRun{Job: j, Sandbox: sb, Events: rec,
		Progress: func(context.Context, int, drydock.Usage) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	shot := reqs[1].LastUser().ToolResults[0]
	if shot.IsError || len(shot.Images) != 1 || !bytes.HasPrefix(shot.Images[0].Data, []byte("\x89PNG")) {
		t.Fatalf("screenshot reached the model as %+v", shot)
	}
	code := reqs[3].LastUser().ToolResults[0]
	if code.IsError || !strings.Contains(code.Output, "42") || len(code.Images) != 1 || !bytes.Equal(code.Images[0].Data, llmtest.PNG) {
		t.Errorf("second execute_code reached the model as %q with %d images", code.Output, len(code.Images))
	}
	obs := rec.observations(t)
	if len(obs[0].Images) != 1 || !strings.HasPrefix(obs[0].Images[0].Path, ".drydock/screenshots/") {
		t.Errorf("screenshot observation %+v", obs[0])
	}
}
