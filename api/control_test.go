package api_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
)

// eventuallyJob polls the job until cond holds: the proxy releases control
// when it sees the viewer's connection end, which is after the close.
func eventuallyJob(t *testing.T, lb *liveBundle, id string, what string, cond func(*drydock.Job) bool) *drydock.Job {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		j, err := lb.store.GetJob(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: job is paused=%v by %q, control %q", what, j.Paused, j.PausedBy, j.ControlBy)
		}
	}
}

// Taking control of the desktop is a lease in the store: it pauses the
// agent, a second person is refused naming the holder, input reaches the
// desktop, and closing the connection releases it and resumes the agent.
func TestDesktopControlIsALeaseThatPausesTheAgent(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	vnc := &fakeVNC{w: 8, h: 8}
	j, l := desktopJob(t, b, vnc, "sb-lease", true)
	second := b.link(t, b.admin, j.ID, "desktop", true) // made before alice takes control

	// A view-only viewer pauses nothing.
	view, err := dialViewer(t.Context(), b.link(t, b.alice, j.ID, "desktop", false).WebSocketURL, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer view.close()
	if got, _ := b.store.GetJob(t.Context(), j.ID); got.Paused {
		t.Fatal("a view-only viewer paused the job")
	}

	v, err := dialViewer(t.Context(), l.WebSocketURL, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	_, data := b.send(t, "GET", "/v1/jobs/"+j.ID, b.alice, "")
	var got drydock.Job
	json.Unmarshal(data, &got)
	if !got.Paused || got.ControlBy != "tok_alice" || got.PausedBy != "" {
		t.Fatalf("job while alice has control: %s", data)
	}

	// Someone else: refused when asking for a link, and when using one.
	resp, data := b.send(t, "POST", "/v1/jobs/"+j.ID+"/desktop/link", b.admin, `{"control": true}`)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(data), "tok_alice has control") {
		t.Fatalf("control link while alice has control: %d %s", resp.StatusCode, data)
	}
	c, wsResp, err := websocket.Dial(t.Context(), second.WebSocketURL, &websocket.DialOptions{Subprotocols: []string{"binary"}})
	if err == nil {
		c.CloseNow()
		t.Fatal("a second controller was connected")
	}
	if wsResp == nil || wsResp.StatusCode != http.StatusConflict {
		t.Fatalf("second controller: %v %v; want 409", wsResp, err)
	}

	v.input()
	if err := v.frame(); err != nil {
		t.Fatal(err)
	}
	types, _ := vnc.received()
	if diff := cmp.Diff([]byte{4, 5, 6, 2, 3}, types); diff != "" {
		t.Errorf("messages the desktop received (-want +got):\n%s", diff)
	}

	v.close()
	eventuallyJob(t, b, j.ID, "after alice disconnected", func(j *drydock.Job) bool { return !j.Paused && j.ControlBy == "" })
	es, _ := b.store.ListEvents(t.Context(), j.ID, 0, 100)
	var kinds []string
	for _, e := range es {
		if e.Type == drydock.EventPaused || e.Type == drydock.EventResumed {
			var p drydock.PauseEvent
			json.Unmarshal(e.Data, &p)
			kinds = append(kinds, string(e.Type)+":"+string(p.Reason)+":"+p.By)
		}
	}
	if diff := cmp.Diff([]string{"paused:control:tok_alice", "resumed:control:tok_alice"}, kinds); diff != "" {
		t.Errorf("pause events (-want +got):\n%s", diff)
	}
	// Now the admin may take it.
	if v2, err := dialViewer(t.Context(), b.link(t, b.admin, j.ID, "desktop", true).WebSocketURL, nil, ""); err != nil {
		t.Fatalf("control after the release: %v", err)
	} else {
		v2.close()
	}
}

// Releasing control during a person's pause leaves the job paused.
func TestDesktopControlDuringAPause(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	vnc := &fakeVNC{w: 8, h: 8}
	j, l := desktopJob(t, b, vnc, "sb-lease-pause", true)
	if resp, data := b.send(t, "POST", "/v1/jobs/"+j.ID+"/pause", b.alice, ""); resp.StatusCode != 200 {
		t.Fatalf("pause: %d %s", resp.StatusCode, data)
	}
	v, err := dialViewer(t.Context(), l.WebSocketURL, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	v.close()
	got := eventuallyJob(t, b, j.ID, "after the release", func(j *drydock.Job) bool { return j.ControlBy == "" })
	if !got.Paused || got.PausedBy != "tok_alice" {
		t.Fatalf("job after releasing control during a pause: %+v", got)
	}
}

// A lease ended elsewhere (here as --pause-max ends it) closes the
// controlling connection with the reason, rather than leave a page that
// says it controls a desktop its input no longer reaches.
func TestDesktopControlEndedElsewhereClosesTheConnection(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, func(c *api.Config) { c.ControlTTL = 300 * time.Millisecond })
	vnc := &fakeVNC{w: 8, h: 8}
	j, l := desktopJob(t, b, vnc, "sb-lease-ended", true)
	v, err := dialViewer(t.Context(), l.WebSocketURL, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	eventuallyJob(t, b, j.ID, "alice has control", func(j *drydock.Job) bool { return j.ControlBy == "tok_alice" })
	if _, err := b.store.ChangePause(t.Context(), j.ID, drydock.PauseChange{Op: drydock.OpEndPause, By: "pause-max"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := v.frame()
		if err == nil {
			if time.Now().After(deadline) {
				t.Fatal("the connection stayed open after its control ended")
			}
			continue
		}
		// A normal closure reads as EOF here; its reason is checked in
		// TestCloseReasonOfEndedControl.
		if !errors.Is(err, io.EOF) {
			t.Fatalf("closed with %v; want a normal closure", err)
		}
		break
	}
}
