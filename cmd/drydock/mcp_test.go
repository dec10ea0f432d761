package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// drydock mcp speaks JSON-RPC on stdin and stdout, as a client of the
// server at --url with --token: initialisation, then a tool call that reads
// a job through the API. stdout carries nothing but protocol messages.
func TestMCPServesStdioAsAClientOfTheServer(t *testing.T) {
	t.Parallel()
	srv, run := setupFake(t)
	job := srv.AddJob(drydock.JobSpec{Task: "ship it"}, time.Now())
	r := run()
	pr, pw := io.Pipe()
	r.in = pr
	lines := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_job","arguments":{"job_id":"` + job.ID + `"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_job","arguments":{}}}`,
	}, "\n") + "\n"
	done := make(chan error, 1)
	go func() { done <- r.exec("mcp") }()
	if _, err := io.WriteString(pw, lines); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &r.out, `"id":2`)
	waitFor(t, &r.out, `"id":3`)
	// The client closes stdin: the server ends cleanly.
	pw.Close()
	if err := <-done; err != nil {
		t.Fatalf("drydock mcp: %v\nstderr: %s", err, r.err.String())
	}
	answers := map[float64]map[string]any{}
	for line := range strings.SplitSeq(strings.TrimSpace(r.out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout has a line that is not JSON-RPC: %q", line)
		}
		if id, ok := m["id"].(float64); ok {
			answers[id] = m
		}
	}
	if info, _ := answers[1]["result"].(map[string]any); info == nil || !strings.Contains(r.out.String(), `"name":"drydock"`) {
		t.Errorf("initialize: %v", answers[1])
	}
	got, _ := json.Marshal(answers[2])
	if !strings.Contains(string(got), "Job "+job.ID) || !strings.Contains(string(got), "ship it") {
		t.Errorf("get_job: %s", got)
	}
	got, _ = json.Marshal(answers[3])
	if !strings.Contains(string(got), `"isError":true`) || !strings.Contains(string(got), "job_id") {
		t.Errorf("get_job without job_id: %s; want an error result naming job_id", got)
	}
	if !strings.Contains(r.err.String(), "serving the Model Context Protocol") {
		t.Errorf("stderr: %q", r.err.String())
	}
}
