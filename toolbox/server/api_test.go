package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		name, auth string
		status     int
	}{
		{"no header", "", 401},
		{"wrong token", "Bearer nope", 401},
		{"token prefix", "Bearer " + testToken[:5], 401},
		{"token with suffix", "Bearer " + testToken + "x", 401},
		{"basic scheme", "Basic " + testToken, 401},
		{"no scheme", testToken, 401},
		{"right token", "Bearer " + testToken, 200},
		{"scheme in lower case", "bearer " + testToken, 200},
	} {
		for _, path := range []string{"/v1/info", "/v1/ready", "/v1/files/list", "/v1/sessions"} {
			r := b.do("GET", path, nil, "Authorization", c.auth)
			if r.status != c.status {
				t.Errorf("%s %s: %d, want %d", c.name, path, r.status, c.status)
			}
			if c.status == 401 && (r.errCode() != "unauthorized" || r.header.Get("WWW-Authenticate") == "") {
				t.Errorf("%s %s: body %s, headers %v", c.name, path, r.body, r.header)
			}
		}
	}
	// Mutating requests are refused before they run, request id or not.
	r := b.do("PUT", "/v1/files?path=x", "x", "Authorization", "", toolbox.HeaderRequestID, "r1")
	if r.status != 401 {
		t.Errorf("unauthenticated write: %d", r.status)
	}
	if _, err := os.Stat(filepath.Join(b.ws, "x")); err == nil {
		t.Error("unauthenticated write created the file")
	}
	// Liveness needs no token and says nothing but ok.
	r = b.do("GET", "/v1/health", nil, "Authorization", "")
	if r.status != 200 || strings.TrimSpace(string(r.body)) != `{"status":"ok"}` {
		t.Errorf("health: %d %s", r.status, r.body)
	}
}

func TestEmptyTokenFailsClosed(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Token = "" })
	for _, auth := range []string{"", "Bearer ", "Bearer x"} {
		if r := b.do("GET", "/v1/info", nil, "Authorization", auth); r.status != 401 {
			t.Errorf("auth %q with no configured token: %d", auth, r.status)
		}
	}
}

func TestReadyAndInfo(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Profile = drydock.ProfileDesktop; c.Version = "1.2.3" })
	var rd toolbox.Readiness
	b.ok(200, &rd, "GET", "/v1/ready", nil)
	want := toolbox.Readiness{Ready: true, Components: []toolbox.Component{
		{Name: "files", Ready: true}, {Name: "shell", Ready: true}}}
	if diff := cmp.Diff(want, rd); diff != "" {
		t.Errorf("ready (-want +got):\n%s", diff)
	}
	var info toolbox.Info
	b.ok(200, &info, "GET", "/v1/info", nil)
	if diff := cmp.Diff(toolbox.Info{APIVersion: toolbox.APIVersion, Version: "1.2.3", Profile: "desktop", Workspace: b.ws}, info); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}
	// Without its services the desktop and code routes say so.
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/desktop/screenshot"},
		{"POST", "/v1/desktop/action"},
		{"GET", "/v1/desktop/vnc"},
		{"POST", "/v1/code/run"},
	} {
		r := b.do(c.method, c.path, `{"action":"x","language":"python","code":"1"}`)
		if r.status != http.StatusNotImplemented || r.errCode() != "not_implemented" {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}

	// A missing workspace makes the files component unready, until it exists.
	os.Rename(b.ws, b.ws+".away")
	b.srv.ws.close()
	r := b.ok(503, &rd, "GET", "/v1/ready", nil)
	if c, _ := rd.Component("files"); rd.Ready || c.Ready || c.Message == "" {
		t.Errorf("ready without a workspace: %s", r.body)
	}
	os.Rename(b.ws+".away", b.ws)
	b.ok(200, &rd, "GET", "/v1/ready", nil)
}

// fakeServices stands in for the desktop and code packages to test the
// routes' plumbing; the real packages have their own tests.
type fakeServices struct{ ready bool }

func (f fakeServices) Components(context.Context) []toolbox.Component {
	return []toolbox.Component{{Name: "display", Ready: f.ready, Message: "starting"}}
}
func (f fakeServices) Screenshot(context.Context) (*toolbox.Screenshot, error) {
	if !f.ready {
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "display is starting")
	}
	return &toolbox.Screenshot{PNG: []byte{0x89, 'P', 'N', 'G'}, Width: 2, Height: 1, Scale: 1}, nil
}
func (f fakeServices) Do(_ context.Context, a toolbox.DesktopAction) (*toolbox.DesktopResult, error) {
	return &toolbox.DesktopResult{Cursor: a.Coordinate}, nil
}
func (f fakeServices) ServeVNC(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusTeapot)
}
func (f fakeServices) Run(_ context.Context, req toolbox.CodeRequest) (*toolbox.CodeResult, error) {
	return &toolbox.CodeResult{Outputs: []toolbox.CodeOutput{{Kind: toolbox.OutputResult, Text: req.Code}}}, nil
}

func TestServiceRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Desktop = fakeServices{}; c.Code = fakeServices{} })
	var rd toolbox.Readiness
	b.ok(200, &rd, "GET", "/v1/ready", nil)
	if c, ok := rd.Component("display"); !ok || c.Ready || !rd.Ready {
		t.Errorf("readiness with a starting display: %+v", rd)
	}
	if r := b.do("GET", "/v1/desktop/screenshot", nil); r.status != 503 {
		t.Errorf("screenshot while starting: %d %s", r.status, r.body)
	}
	var dr toolbox.DesktopResult
	b.ok(200, &dr, "POST", "/v1/desktop/action", toolbox.DesktopAction{Action: "mouse_move", Coordinate: []int{3, 4}})
	if !cmp.Equal(dr.Cursor, []int{3, 4}) {
		t.Errorf("action: %+v", dr)
	}
	b.ok(http.StatusTeapot, nil, "GET", "/v1/desktop/vnc", nil)
	var cr toolbox.CodeResult
	b.ok(200, &cr, "POST", "/v1/code/run", toolbox.CodeRequest{Language: "python", Code: "1+1"})
	if len(cr.Outputs) != 1 || cr.Outputs[0].Text != "1+1" {
		t.Errorf("code: %+v", cr)
	}
	if r := b.do("POST", "/v1/code/run", toolbox.CodeRequest{Language: "cobol", Code: "x"}); r.status != 400 {
		t.Errorf("unknown language: %d", r.status)
	}
}

func execFrames(t *testing.T, body []byte) []toolbox.ExecFrame {
	t.Helper()
	var out []toolbox.ExecFrame
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var f toolbox.ExecFrame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("frame %q: %v", sc.Text(), err)
		}
		out = append(out, f)
	}
	return out
}

func collect(frames []toolbox.ExecFrame) (stdout, stderr string, last toolbox.ExecFrame) {
	var o, e strings.Builder
	for _, f := range frames {
		switch f.Type {
		case toolbox.FrameStdout:
			o.Write(f.Data)
		case toolbox.FrameStderr:
			e.Write(f.Data)
		}
		last = f
	}
	return o.String(), e.String(), last
}

func TestExec(t *testing.T) {
	t.Parallel()
	b := setup(t)
	os.Mkdir(filepath.Join(b.ws, "d"), 0o755)
	for _, c := range []struct {
		name         string
		req          toolbox.ExecRequest
		stdout, errs string
		code         int
		timedOut     bool
	}{
		{"command", toolbox.ExecRequest{Command: "echo hi; echo oops >&2; exit 4"}, "hi\n", "oops\n", 4, false},
		{"args", toolbox.ExecRequest{Args: []string{"printf", "%s-%s", "a b", "c"}}, "a b-c", "", 0, false},
		{"cwd and env", toolbox.ExecRequest{Command: "pwd; echo $V", Cwd: "d", Env: map[string]string{"V": "v"}},
			filepath.Join(b.ws, "d") + "\nv\n", "", 0, false},
		{"stdin", toolbox.ExecRequest{Args: []string{"cat"}, Stdin: []byte("in\x00put")}, "in\x00put", "", 0, false},
		{"timeout", toolbox.ExecRequest{Command: "echo a; sleep 30", Timeout: dur(300 * time.Millisecond)}, "a\n", "", -1, true},
		{"background child does not hold the stream", toolbox.ExecRequest{Command: "sleep 30 & echo bg"}, "bg\n", "", 0, false},
	} {
		start := time.Now()
		r := b.ok(200, nil, "POST", "/v1/exec", c.req)
		if ct := r.header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("%s: content type %q", c.name, ct)
		}
		out, errs, last := collect(execFrames(t, r.body))
		if out != c.stdout || errs != c.errs || last.Type != toolbox.FrameExit || last.ExitCode != c.code || last.TimedOut != c.timedOut {
			t.Errorf("%s: stdout %q stderr %q last %+v; want %q %q exit %d timed out %v",
				c.name, out, errs, last, c.stdout, c.errs, c.code, c.timedOut)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s took %v", c.name, el)
		}
	}
	for _, req := range []toolbox.ExecRequest{
		{},
		{Command: "x", Args: []string{"y"}},
		{Args: []string{"/no/such/binary"}},
		{Command: "true", Env: map[string]string{"A=B": "c"}},
	} {
		if r := b.do("POST", "/v1/exec", req); r.status != 400 {
			t.Errorf("%+v: %d %s", req, r.status, r.body)
		}
	}
}

func TestRequestIDReplaysFirstResponse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	run := toolbox.RunRequest{Command: "echo x >> log.txt; wc -l < log.txt"}
	first := b.ok(200, nil, "POST", "/v1/sessions/s/run", run, toolbox.HeaderRequestID, "req-1")
	again := b.ok(200, nil, "POST", "/v1/sessions/s/run", run, toolbox.HeaderRequestID, "req-1")
	if !bytes.Equal(first.body, again.body) || again.header.Get(toolbox.HeaderReplayed) != "true" ||
		first.header.Get(toolbox.HeaderReplayed) != "" || again.header.Get(toolbox.HeaderRequestID) != "req-1" {
		t.Errorf("replay: first %s %v, again %s %v", first.body, first.header, again.body, again.header)
	}
	if data, _ := os.ReadFile(filepath.Join(b.ws, "log.txt")); string(data) != "x\n" {
		t.Errorf("command ran %d times", strings.Count(string(data), "x"))
	}
	// Without an id, or with a new one, it runs again.
	b.ok(200, nil, "POST", "/v1/sessions/s/run", run)
	b.ok(200, nil, "POST", "/v1/sessions/s/run", run, toolbox.HeaderRequestID, "req-2")
	if data, _ := os.ReadFile(filepath.Join(b.ws, "log.txt")); string(data) != "x\nx\nx\n" {
		t.Errorf("log after new ids: %q", data)
	}
	// Errors are replayed as they were.
	e1 := b.do("DELETE", "/v1/files?path=nothing", nil, toolbox.HeaderRequestID, "req-3")
	e2 := b.do("DELETE", "/v1/files?path=nothing", nil, toolbox.HeaderRequestID, "req-3")
	if e1.status != 404 || e2.status != 404 || e2.header.Get(toolbox.HeaderReplayed) != "true" {
		t.Errorf("error replay: %d %d %v", e1.status, e2.status, e2.header)
	}
	// An id reused for another request is a conflict.
	if r := b.do("PUT", "/v1/files?path=other", "x", toolbox.HeaderRequestID, "req-1"); r.status != 409 {
		t.Errorf("id reuse: %d %s", r.status, r.body)
	}
	if _, err := os.Stat(filepath.Join(b.ws, "other")); err == nil {
		t.Error("the conflicting request ran")
	}
	// Reads are never replayed.
	b.ok(200, nil, "PUT", "/v1/files?path=f", "one", toolbox.HeaderRequestID, "w1")
	b.ok(200, nil, "PUT", "/v1/files?path=f", "two", toolbox.HeaderRequestID, "w2")
	if r := b.ok(200, nil, "GET", "/v1/files?path=f", nil, toolbox.HeaderRequestID, "w1"); string(r.body) != "two" {
		t.Errorf("read with a used id: %q", r.body)
	}
}

func TestRequestIDRetryWaitsForFirstAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	run := toolbox.RunRequest{Command: "sleep 0.5; echo x >> log.txt; echo done"}
	var wg sync.WaitGroup
	bodies := make([][]byte, 3)
	for i := range bodies {
		wg.Go(func() {
			bodies[i] = b.ok(200, nil, "POST", "/v1/sessions/s/run", run, toolbox.HeaderRequestID, "slow").body
		})
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	for i := 1; i < len(bodies); i++ {
		if !bytes.Equal(bodies[0], bodies[i]) {
			t.Errorf("attempt %d got %s, first got %s", i, bodies[i], bodies[0])
		}
	}
	if data, _ := os.ReadFile(filepath.Join(b.ws, "log.txt")); string(data) != "x\n" {
		t.Errorf("concurrent retries ran the command %d times", strings.Count(string(data), "x"))
	}
}

func TestRequestIDBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.IdempotencyEntries = 2; c.IdempotencyMaxBody = 400 })
	b.ok(200, nil, "PUT", "/v1/files?path=a", "1", toolbox.HeaderRequestID, "a")
	b.ok(200, nil, "PUT", "/v1/files?path=b", "1", toolbox.HeaderRequestID, "b")
	b.ok(200, nil, "PUT", "/v1/files?path=c", "1", toolbox.HeaderRequestID, "c")
	// "a" was evicted, so its id runs again; "c" is still remembered.
	if r := b.do("PUT", "/v1/files?path=a", "1", toolbox.HeaderRequestID, "a"); r.header.Get(toolbox.HeaderReplayed) != "" {
		t.Error("evicted id was replayed")
	}
	if r := b.do("PUT", "/v1/files?path=c", "1", toolbox.HeaderRequestID, "c"); r.header.Get(toolbox.HeaderReplayed) != "true" {
		t.Error("recent id was not replayed")
	}
	// A response too large to keep is not replayed as something else.
	b.session("s")
	b.ok(200, nil, "POST", "/v1/sessions/s/run", toolbox.RunRequest{Command: "seq 1 1000"}, toolbox.HeaderRequestID, "big")
	if r := b.do("POST", "/v1/sessions/s/run", toolbox.RunRequest{Command: "seq 1 1000"}, toolbox.HeaderRequestID, "big"); r.status != 409 {
		t.Errorf("replay of an oversized response: %d %s", r.status, r.body)
	}
	if r := b.do("PUT", "/v1/files?path=x", "1", toolbox.HeaderRequestID, strings.Repeat("i", 200)); r.status != 400 {
		t.Errorf("overlong id: %d", r.status)
	}
}
