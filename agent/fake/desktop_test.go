package fake_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/fake"
	"github.com/drydockhq/drydock/runtime/docker"
	"github.com/drydockhq/drydock/toolbox"
)

// desktopSandbox starts a sandbox of the real desktop image on the Docker
// test engine, destroyed when the test ends, with its display ready; or
// skips: DRYDOCK_TEST_DOCKER_HOST names the engine, DRYDOCK_TEST_IMAGE_DESKTOP
// the image (default drydock-sandbox:desktop, from drydock image build).
func desktopSandbox(t *testing.T) (*drydock.Sandbox, *toolbox.Client) {
	t.Helper()
	host := os.Getenv("DRYDOCK_TEST_DOCKER_HOST")
	if host == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST is not set: no engine for a desktop sandbox (scripts/testenv/docker-up.sh starts one)")
	}
	image := os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP")
	if image == "" {
		image = "drydock-sandbox:desktop"
	}
	state, err := os.MkdirTemp("", "dd-fake-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	rt, err := docker.New(docker.Options{Host: host, ServerID: "fake-agent-test", StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-fake-desktop", Image: image, Profile: drydock.ProfileDesktop})
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
	c := toolbox.New(sb.Endpoint, sb.Token)
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx, "display"); err != nil {
		t.Fatal(err)
	}
	return sb, c
}

// On a desktop the demo shows its project on the display and looks at it
// through the computer tool: the screenshot is saved in the workspace,
// named by the observation, and the summary says what the desktop shows.
func TestDemoShowsItsWorkOnTheDesktop(t *testing.T) {
	t.Parallel()
	sb, c := desktopSandbox(t)
	b := &bundle{sb: sb, agent: &fake.Agent{Dial: func(*drydock.Sandbox) fake.Workspace { return c }}}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	l, out, err := b.runWith(t, ctx, "Create a REST API in Node.js that keeps a shopping list"+fast, runOpts{})
	if err != nil {
		t.Fatal(err)
	}
	var shot string
	for i, o := range l.observations(t) {
		if o.IsError {
			t.Errorf("step %d (%s) failed: %s", i+1, o.Name, o.Output)
		}
		if o.Name == "computer" {
			if len(o.Images) != 1 || !strings.HasPrefix(o.Images[0].Path, ".drydock/screenshots/step-") || o.Images[0].MediaType != "image/png" {
				t.Fatalf("the computer step's observation %+v; want its screenshot saved", o)
			}
			shot = o.Images[0].Path
		}
	}
	if shot == "" {
		t.Fatal("the demo did not look at the desktop")
	}
	data, err := c.ReadFile(ctx, shot)
	if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG")) {
		t.Errorf("the screenshot %s in the workspace: %d bytes, %v; want a PNG", shot, len(data), err)
	}
	if out == nil || !strings.Contains(out.Summary, "The desktop shows it; the screenshot is "+shot) || !strings.Contains(out.Summary, "pass") {
		t.Errorf("summary %+v; want the tests passing and the screenshot named", out)
	}
}
