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

// engines are the container engines the sandbox tests run on, each named
// by the variable scripts/testenv/{docker,podman}-up.sh print.
var engines = []struct{ name, env string }{
	{"docker", "DRYDOCK_TEST_DOCKER_HOST"},
	{"podman", "DRYDOCK_TEST_PODMAN_HOST"},
}

// requireEngine returns the engine's address or skips the test.
func requireEngine(t *testing.T, env string) string {
	t.Helper()
	host := os.Getenv(env)
	if host == "" {
		t.Skipf("%s is not set: no engine for a real sandbox (scripts/testenv/docker-up.sh or podman-up.sh starts one)", env)
	}
	return host
}

// engineSandbox starts a sandbox of the profile from image on the engine
// at host, destroyed when the test ends, and waits until toolboxd and the
// components are ready; it skips the test if the image is missing or its
// toolboxd lacks a component.
func engineSandbox(t *testing.T, host, image string, profile drydock.Profile, components ...string) *drydock.Sandbox {
	t.Helper()
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
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-agent-" + string(profile), Image: image, Profile: profile})
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
	for _, c := range components {
		if _, ok := ready.Component(c); !ok {
			t.Skipf("the image's toolboxd does not provide %s (an image built before toolboxd served it?)", c)
		}
	}
	if err := box.WaitReady(ctx, components...); err != nil {
		t.Fatal(err)
	}
	return sb
}

// requireDesktopSandbox starts a desktop sandbox from the real image on the
// Docker test engine, or skips: DRYDOCK_TEST_IMAGE_DESKTOP names the image
// (default drydock-sandbox:desktop, from drydock image build).
func requireDesktopSandbox(t *testing.T) *drydock.Sandbox {
	t.Helper()
	host := requireEngine(t, "DRYDOCK_TEST_DOCKER_HOST")
	image := os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP")
	if image == "" {
		image = "drydock-sandbox:desktop"
	}
	return engineSandbox(t, host, image, drydock.ProfileDesktop, "display", "kernel")
}

// In the real desktop sandbox: a screenshot reaches the model as an image,
// python state persists between execute_code calls, and a figure the code
// displays comes back as an image too.
func TestDesktopSandboxImagesAndKernel(t *testing.T) {
	t.Parallel()
	sb := requireDesktopSandbox(t)
	png64 := base64.StdEncoding.EncodeToString(llmtest.PNG)
	b := newBundle(t, sb, agent.ProviderAnthropic, llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{call("computer", map[string]string{"action": "screenshot"})}},
		{ToolCalls: []llm.ToolCall{call("execute_code", map[string]string{"language": "python", "code": "x = 21"})}},
		{ToolCalls: []llm.ToolCall{call("execute_code", map[string]string{"language": "python",
			"code": "import base64\nfrom IPython.display import Image, display\ndisplay(Image(data=base64.b64decode('" + png64 + "')))\nprint(x * 2)"})}},
		finish("looked and computed"),
	}}, agent.Config{})
	j := job("Look at the screen, then compute.")
	j.Profile = drydock.ProfileDesktop
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	_, err := b.agent.Run(ctx, &drydock.AgentRun{Job: j, Sandbox: sb, Events: b.rec,
		Progress: func(context.Context, int, drydock.Usage) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	reqs := b.srv.Requests()
	shot := reqs[1].LastUser().ToolResults[0]
	if shot.IsError || len(shot.Images) != 1 || !bytes.HasPrefix(shot.Images[0].Data, []byte("\x89PNG")) {
		t.Fatalf("screenshot reached the model as %+v", shot)
	}
	code := reqs[3].LastUser().ToolResults[0]
	if code.IsError || !strings.Contains(code.Output, "42") || len(code.Images) != 1 || !bytes.Equal(code.Images[0].Data, llmtest.PNG) {
		t.Errorf("second execute_code reached the model as %q with %d images", code.Output, len(code.Images))
	}
	obs := b.rec.observations(t)
	if len(obs[0].Images) != 1 || !strings.HasPrefix(obs[0].Images[0].Path, ".drydock/screenshots/") {
		t.Errorf("screenshot observation %+v", obs[0])
	}
}
