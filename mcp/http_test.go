package mcp_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a token to every request of an HTTP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func (b *bundle) token(t *testing.T, id string) string {
	t.Helper()
	secret, hash := drydock.NewTokenSecret()
	if err := b.sqlite.CreateToken(t.Context(), &drydock.Token{ID: id, Name: id, CreatedAt: time.Now(), Hash: hash}); err != nil {
		t.Fatal(err)
	}
	return secret
}

// /mcp on the API server acts for the token of each request: a client of
// alice's sees her jobs through every tool, bob's sees none of them.
func TestStreamableHTTPActsForTheCallersToken(t *testing.T) {
	t.Parallel()
	b := serve(t, false)
	alice, bob := b.token(t, "tok_alice"), b.token(t, "tok_bob")
	as := b.connect(t, &sdk.StreamableClientTransport{Endpoint: b.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{alice}}, DisableStandaloneSSE: true})
	b.session = as
	id := b.schedule(t, map[string]any{"task": "notes [fake:steps=1] [fake:delay=0s]"})
	if txt := b.ok(t, "wait_job", id, map[string]any{"job_id": id, "timeout": 60}); !strings.Contains(txt, "finished (complete)") || !strings.Contains(txt, b.url+"/v1/jobs/"+id+"/artifact.zip") {
		t.Fatalf("wait_job over HTTP: %q; want the job complete with a download link on the server's own address", txt)
	}
	if txt := b.ok(t, "read_file", id, map[string]any{"job_id": id, "path": "notes/step-001.md"}); !strings.Contains(txt, "# Step 1") {
		t.Errorf("read_file over HTTP: %q", txt)
	}
	b.session = b.connect(t, &sdk.StreamableClientTransport{Endpoint: b.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{bob}}, DisableStandaloneSSE: true})
	for _, tool := range []string{"get_job", "get_diff", "cancel_job"} {
		if txt, isErr := b.call(t, tool, map[string]any{"job_id": id}); !isErr || !strings.Contains(txt, "not found") {
			t.Errorf("bob's %s of alice's job: %v %q; want not found", tool, isErr, txt)
		}
	}
	if txt := b.ok(t, "list_jobs", "", nil); strings.Contains(txt, id) {
		t.Errorf("bob's list_jobs shows alice's job: %q", txt)
	}
}

// The endpoint keeps the API's boundary: a token is needed, foreign
// Origins and non-JSON bodies are refused, bodies are capped, and GET
// (a standalone stream, which a stateless server has not) is 405.
func TestStreamableHTTPKeepsTheBoundary(t *testing.T) {
	t.Parallel()
	b := serve(t, false)
	alice := b.token(t, "tok_alice")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	cases := []struct {
		name, method, token, ctype, origin, body string
		status                                   int
		want                                     string
	}{
		{"no token", "POST", "", "application/json", "", init, 401, "missing bearer token"},
		{"bad token", "POST", "ddk_nope", "application/json", "", init, 401, "invalid or revoked"},
		{"foreign origin", "POST", alice, "application/json", "https://evil.example", init, 403, "cross-origin"},
		{"form body", "POST", alice, "text/plain", "", init, 415, "Content-Type"},
		{"oversized body", "POST", alice, "application/json", "", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("x", 3<<20) + `"}}`, 413, ""},
		{"get", "GET", alice, "", "", "", 405, ""},
		{"delete", "DELETE", alice, "", "", "", 405, ""},
		{"initialize", "POST", alice, "application/json", "", init, 200, `"serverInfo"`},
	}
	for _, c := range cases {
		req, _ := http.NewRequestWithContext(t.Context(), c.method, b.url+"/mcp", strings.NewReader(c.body))
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(data), c.want) {
			t.Errorf("%s: %d %.300s; want %d naming %q", c.name, resp.StatusCode, data, c.status, c.want)
		}
	}
}

// On a loopback server in development mode, a request for another host
// name (DNS rebinding) is refused before it reaches MCP.
func TestStreamableHTTPRefusesForeignHosts(t *testing.T) {
	t.Parallel()
	b := serve(t, true)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", b.url+"/mcp", strings.NewReader(`{}`))
	req.Host = "rebind.example"
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("foreign host: %d; want 421", resp.StatusCode)
	}
}

// Over HTTP the tools reach the API in process: a window of a large file
// is read and the rest of the answer dropped, without buffering the file
// or taking the server down when the API's handler aborts its cut answer.
func TestLargeFileWindowOverHTTP(t *testing.T) {
	t.Parallel()
	b := serve(t, true)
	b.session = b.connect(t, &sdk.StreamableClientTransport{Endpoint: b.url + "/mcp", DisableStandaloneSSE: true})
	id := b.schedule(t, map[string]any{"agent": "none", "timeout": "10m"})
	b.ok(t, "wait_job", id, map[string]any{"job_id": id, "timeout": 60})
	b.ok(t, "run_command", id, map[string]any{"job_id": id, "command": "head -c 20000000 /dev/zero | tr '\\0' a > big.txt"})
	for range 3 {
		txt := b.ok(t, "read_file", id, map[string]any{"job_id": id, "path": "big.txt", "max_bytes": 1000})
		if !strings.Contains(txt, "[cut at 1000 of 20000000 bytes") {
			t.Fatalf("read_file of a large file: %.300q", txt)
		}
	}
	if txt := b.ok(t, "get_job", id, map[string]any{"job_id": id}); !strings.Contains(txt, "status: running") {
		t.Errorf("the server after the cut reads: %q", txt)
	}
	b.ok(t, "cancel_job", id, map[string]any{"job_id": id})
}
