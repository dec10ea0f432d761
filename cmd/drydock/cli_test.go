package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/drydockhq/drydock/client/clienttest"
)

// clientCLI holds the client commands the way main's cli struct does, so the
// tests parse real command lines.
type clientCLI struct {
	Globals
	Schedule ScheduleCmd `cmd:""`
	Status   StatusCmd   `cmd:""`
	Logs     LogsCmd     `cmd:""`
	Download DownloadCmd `cmd:""`
	Diff     DiffCmd     `cmd:""`
	Cancel   CancelCmd   `cmd:""`
	Message  MessageCmd  `cmd:""`
	Pause    PauseCmd    `cmd:""`
	Resume   ResumeCmd   `cmd:""`
	Egress   EgressCmd   `cmd:""`
	Jobs     JobsCmd     `cmd:""`
	MCP      MCPCmd      `cmd:"" name:"mcp"`
	Exec     ExecCmd     `cmd:""`
	Put      PutCmd      `cmd:""`
}

// syncBuffer is a bytes.Buffer that a command may write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// run is one command line against a server.
type cliRun struct {
	t         *testing.T
	url       string
	token     string
	stdin     string
	in        io.Reader // instead of stdin, for a command that reads as it goes
	color     bool
	interrupt context.Context // when done, the command sees Ctrl-C
	out, err  syncBuffer
}

func (r *cliRun) exec(args ...string) error {
	r.t.Helper()
	var c clientCLI
	c.Out, c.Err, c.In = &r.out, &r.err, strings.NewReader(r.stdin)
	if r.in != nil {
		c.In = r.in
	}
	c.color = &r.color
	if r.interrupt != nil {
		c.notify = func(parent context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(parent)
			stop := context.AfterFunc(r.interrupt, cancel)
			return ctx, func() { stop(); cancel() }
		}
	}
	parser, err := kong.New(&c, kong.Name("drydock"), kong.Exit(func(int) { r.t.Fatalf("kong exited on %q", args) }))
	if err != nil {
		r.t.Fatalf("kong.New: %v", err)
	}
	full := append([]string{"--url", r.url, "--token", r.token}, args...)
	ctx, err := parser.Parse(full)
	if err != nil {
		return err
	}
	return ctx.Run(&c.Globals)
}

// waitFor polls buf until it contains s.
func waitFor(t *testing.T, buf *syncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("output never contained %q; got:\n%s", s, buf.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func setupFake(t *testing.T) (*clienttest.Server, func() *cliRun) {
	t.Helper()
	srv := clienttest.NewServer()
	t.Cleanup(srv.Close)
	srv.RequireToken("ddk_cli")
	return srv, func() *cliRun { return &cliRun{t: t, url: srv.URL, token: "ddk_cli"} }
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q; got:\n%s", what, w, got)
		}
	}
}

func TestErrorsNameTheFix(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()

	tests := []struct {
		name  string
		url   string
		token string
		args  []string
		want  []string
	}{
		{"no server", down, "", []string{"status", "j1"},
			[]string{"cannot reach the Drydock server at " + down, "`drydock server` running?", "DRYDOCK_URL"}},
		{"no token", srv.URL, "", []string{"jobs"},
			[]string{"401", "set DRYDOCK_TOKEN or --token", "drydock token create"}},
		{"wrong token", srv.URL, "ddk_wrong", []string{"cancel", "j1"},
			[]string{"401", "rejected the token", "set DRYDOCK_TOKEN or --token"}},
		{"unknown job", srv.URL, "ddk_cli", []string{"logs", "nope"},
			[]string{"job nope not found", "drydock jobs"}},
		{"bad status", srv.URL, "ddk_cli", []string{"jobs", "--status", "running,done"},
			[]string{`unknown status "done"`, "pending, running"}},
		{"invalid spec", srv.URL, "ddk_cli", []string{"schedule", "x", "--profile", "gpu"},
			[]string{`profile must be "headless" or "desktop"`}},
		{"follow and wait", srv.URL, "ddk_cli", []string{"schedule", "x", "--follow", "--wait"},
			[]string{"--follow and --wait can't be used together"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRun()
			r.url, r.token = tt.url, tt.token
			err := r.exec(tt.args...)
			if err == nil {
				t.Fatalf("succeeded; want an error")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			mustContain(t, "error", err.Error(), tt.want...)
		})
	}
	if n := len(srv.StreamResumes()); n != 0 {
		t.Errorf("%d streams opened by failing commands", n)
	}
}
