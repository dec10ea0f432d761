package e2e_test

import (
	"bufio"
	"context"
	binenc "encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// takeControl opens the job's desktop in control mode as noVNC would (a
// control link, the RFB handshake) and returns the open connection. It
// retries while the sandbox's desktop is still starting.
func takeControl(t *testing.T, s *server, id string, within time.Duration) net.Conn {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		nc, err := dialControl(t, s, id)
		if err == nil {
			return nc
		}
		if time.Now().After(deadline) {
			t.Fatalf("take control of job %s: %v\n%s", id, err, s.logs)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func dialControl(t *testing.T, s *server, id string) (net.Conn, error) {
	code, data := s.do("POST", "/v1/jobs/"+id+"/desktop/link", "", `{"control": true}`)
	if code != 200 {
		return nil, fmt.Errorf("link: %d %s", code, data)
	}
	var l struct {
		WebSocketURL string `json:"websocket_url"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, l.WebSocketURL, &websocket.DialOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(-1)
	nc := websocket.NetConn(context.Background(), c, websocket.MessageBinary)
	if err := rfbClientHandshake(nc); err != nil {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// rfbClientHandshake is the viewer's side of RFB 3.8 with no
// authentication (the proxy does the VNC password itself).
func rfbClientHandshake(nc net.Conn) error {
	br := bufio.NewReader(nc)
	var ver [12]byte
	if _, err := io.ReadFull(br, ver[:]); err != nil {
		return fmt.Errorf("version: %w", err)
	}
	if _, err := io.WriteString(nc, "RFB 003.008\n"); err != nil {
		return err
	}
	n, err := br.ReadByte()
	if err != nil || n == 0 {
		return fmt.Errorf("security types: %d %v", n, err)
	}
	if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
		return err
	}
	if _, err := nc.Write([]byte{1}); err != nil {
		return err
	}
	var res [4]byte
	if _, err := io.ReadFull(br, res[:]); err != nil || res != [4]byte{} {
		return fmt.Errorf("security result %v %v", res, err)
	}
	if _, err := nc.Write([]byte{1}); err != nil { // shared
		return err
	}
	var init [24]byte
	if _, err := io.ReadFull(br, init[:]); err != nil {
		return fmt.Errorf("server init: %w", err)
	}
	_, err = io.CopyN(io.Discard, br, int64(binenc.BigEndian.Uint32(init[20:])))
	return err
}

// Take control → the agent waits → release → the
// agent's next prompt says a person used the desktop, with a screenshot of
// it taken after the release. A desktop sandbox on Docker, the real binary.
func TestTakeControlPausesTheAgent(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "anthropic", llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "sleep 4; echo one > one.txt"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Done."}`)}},
	}})
	id := e.schedule(`{"task": "Write one.txt.", "profile": "desktop", "model": "claude-sonnet-4-5"}`)
	e.waitEvent(id, drydock.EventToolCall, 3*time.Minute)

	nc := takeControl(t, e.server, id, time.Minute)
	j := e.status(id)
	if !j.Paused || j.ControlBy != "local user" || j.Status != drydock.StatusRunning {
		t.Fatalf("job with control taken: %s paused=%v control=%q", j.Status, j.Paused, j.ControlBy)
	}
	// The running call finishes; then the agent waits for as long as the
	// person has control.
	e.waitEvent(id, drydock.EventObservation, 30*time.Second)
	time.Sleep(5 * time.Second)
	if n := len(e.model.Requests()); n != 1 {
		t.Fatalf("the model got %d requests while a person had control; want 1", n)
	}
	nc.Close()

	j, _ = e.waitTerminal(id, 2*time.Minute)
	if j.Status != drydock.StatusComplete || j.Paused || j.ControlBy != "" {
		t.Fatalf("job: %s paused=%v control=%q err=%q\n%s", j.Status, j.Paused, j.ControlBy, j.Error, e.logs)
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests; want 2", len(reqs))
	}
	last := reqs[1].LastUser()
	for _, want := range []string{"The job was paused from", "by local user", "A person used the desktop", "This is the desktop now"} {
		if !strings.Contains(last.Text, want) {
			t.Errorf("the prompt after the release lacks %q: %q", want, last.Text)
		}
	}
	if len(last.Images) != 1 || len(last.Images[0].Data) < 100 {
		t.Errorf("the prompt after the release has %d images; want a fresh screenshot", len(last.Images))
	}
	es := e.events(id)
	if countEvents(es, drydock.EventPaused) != 1 || countEvents(es, drydock.EventResumed) != 1 {
		t.Errorf("events: %d paused, %d resumed; want one each", countEvents(es, drydock.EventPaused), countEvents(es, drydock.EventResumed))
	}
	files := e.archive(id)
	if files["one.txt"] != "one\n" {
		t.Errorf("one.txt = %q", files["one.txt"])
	}
}
