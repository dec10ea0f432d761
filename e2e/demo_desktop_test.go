package e2e_test

import (
	"encoding/json"
	"image/png"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
)

// The demo agent on a real desktop sandbox (Docker) shows its work on the
// desktop: it opens the project it wrote in a terminal there and takes a
// screenshot through the computer tool, which the event log names and the
// archive holds, next to the project.
func TestDemoAgentShowsItsWorkOnTheDesktop(t *testing.T) {
	t.Parallel()
	host := os.Getenv("DRYDOCK_TEST_DOCKER_HOST")
	if host == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST not set: no Docker engine to run a desktop sandbox on (make test starts one)")
	}
	image := os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP")
	if image == "" {
		image = "drydock-sandbox:desktop"
	}
	s := newServer(t)
	t.Cleanup(func() { destroyByServer(t, host, s.node) })
	for i, a := range s.args {
		if a == "local" && s.args[i-1] == "--runtime" {
			s.args[i] = "docker"
		}
	}
	s.args = append(s.args, "--docker-host", host, "--image-desktop", image)
	s.start()

	id := s.schedule(`{"task": "Build me a todo app in React [fake:delay=0s]", "profile": "desktop"}`)
	j, seen := s.waitTerminal(id, 3*time.Minute)
	if j.Status != drydock.StatusComplete {
		t.Fatalf("job ended %s (%v): %s\n%s", j.Status, seen, j.Error, s.logs)
	}

	var shot string
	var opened bool
	for _, e := range s.events(id) {
		if e.Type != drydock.EventObservation {
			continue
		}
		var o transcript.Observation
		if err := json.Unmarshal(e.Data, &o); err != nil {
			t.Fatal(err)
		}
		if o.IsError {
			t.Errorf("step %d (%s) failed: %s", o.Step, o.Name, o.Output)
		}
		opened = opened || strings.Contains(o.Output, "opened a terminal on the desktop")
		if o.Name == "computer" && len(o.Images) == 1 {
			shot = o.Images[0].Path
		}
	}
	if !opened {
		t.Error("the demo did not open the project on the desktop")
	}
	if shot == "" {
		t.Fatal("no screenshot through the computer tool in the event log")
	}

	_, data := s.do("GET", "/v1/jobs/"+id+"/artifact.tar.gz", "", "")
	files := tarGzFiles(t, data)
	for _, f := range []string{"todo-app-react/README.md", "todo-app-react/src/App.jsx", shot} {
		if _, ok := files[f]; !ok {
			t.Errorf("archive lacks %s", f)
		}
	}
	img, err := png.Decode(strings.NewReader(files[shot]))
	if err != nil {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	// xterm's white background over the window manager's dark one: a
	// screen with no window on it has no white area.
	white, b := 0, img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			if r, g, bl, _ := img.At(x, y).RGBA(); r>>8 == 255 && g>>8 == 255 && bl>>8 == 255 {
				white++
			}
		}
	}
	if total := (b.Dx() / 4) * (b.Dy() / 4); white < total/10 {
		t.Errorf("the screenshot shows no terminal window (%d of %d sampled pixels white)", white, total)
	}
}
