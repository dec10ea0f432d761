package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

const testToken = "test-token-0123456789"

// bundle is what a server test needs: a server over a fresh workspace and a
// raw HTTP helper.
type bundle struct {
	t   *testing.T
	srv *Server
	ts  *httptest.Server
	ws  string // workspace as configured
}

func setup(t *testing.T, mod ...func(*Config)) *bundle {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Workspace:      ws,
		Token:          testToken,
		StateDir:       filepath.Join(t.TempDir(), "state"),
		InterruptGrace: time.Second,
	}
	for _, m := range mod {
		m(&cfg)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv := New(cfg, log)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		srv.Close()
	})
	return &bundle{t: t, srv: srv, ts: ts, ws: ws}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) errCode() string {
	var e drydock.ErrorBody
	json.Unmarshal(r.body, &e)
	return e.Error.Code
}

// do sends a request with the test token; body may be nil, []byte, a string
// or a value to encode as JSON. Extra headers come in pairs.
func (b *bundle) do(method, path string, body any, headers ...string) reply {
	b.t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(v)
	case string:
		rd = bytes.NewReader([]byte(v))
	default:
		j, err := json.Marshal(v)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.ts.URL+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.ts.Client().Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: data}
}

// ok is do that fails the test unless the status is want, and decodes the
// JSON body into out (if not nil).
func (b *bundle) ok(want int, out any, method, path string, body any, headers ...string) reply {
	b.t.Helper()
	r := b.do(method, path, body, headers...)
	if r.status != want {
		b.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.status, want, r.body)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			b.t.Fatalf("%s %s: decode %s: %v", method, path, r.body, err)
		}
	}
	return r
}

func (b *bundle) session(id string) {
	b.t.Helper()
	b.ok(http.StatusCreated, nil, "POST", "/v1/sessions", toolbox.SessionRequest{ID: id})
}

func (b *bundle) run(id string, req toolbox.RunRequest) toolbox.RunResult {
	b.t.Helper()
	var res toolbox.RunResult
	b.ok(http.StatusOK, &res, "POST", "/v1/sessions/"+id+"/run", req)
	return res
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
