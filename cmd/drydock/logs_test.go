package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

func TestLogsPagesThroughTheWholeLog(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "t"}, time.Now()) // event 1
	srv.SetStatus(j.ID, drydock.StatusRunning, "")          // 2
	for i := range 2500 {                                   // 3..2502: three pages of 1000
		srv.Emit(j.ID, drydock.EventLog, map[string]any{"level": "info", "message": fmt.Sprint("line ", i)})
	}

	r := newRun()
	if err := r.exec("logs", j.ID, "--json"); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(r.out.String()))
	var want int64 = 1
	for sc.Scan() {
		var e drydock.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if e.Seq != want {
			t.Fatalf("event %d where %d was due", e.Seq, want)
		}
		want++
	}
	if want != 2503 {
		t.Errorf("printed %d events, want 2502", want-1)
	}

	r = newRun()
	if err := r.exec("logs", j.ID, "--after", "2500"); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(r.out.String()), "\n"); len(lines) != 2 || !strings.HasSuffix(lines[1], "log      line 2499") {
		t.Errorf("--after 2500 printed:\n%s", r.out.String())
	}
}

func TestLogsFollow(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "t"}, time.Now())
	srv.SetStatus(j.ID, drydock.StatusRunning, "")
	r := newRun()
	done := make(chan error, 1)
	go func() { done <- r.exec("logs", j.ID, "-f") }()
	waitFor(t, &r.out, "status   running")
	srv.Emit(j.ID, drydock.EventToolCall, map[string]any{"name": "execute_code", "input": map[string]any{"language": "python", "code": "import os\nprint(os.getcwd())"}})
	srv.Emit(j.ID, drydock.EventError, map[string]any{"message": "tool timed out\nafter 60s"})
	srv.Emit(j.ID, drydock.EventCondensation, map[string]any{"summary": "..."})
	srv.Emit(j.ID, "mystery", map[string]any{"x": 1})
	srv.SetStatus(j.ID, drydock.StatusCancelled, "")
	select {
	case err := <-done:
		// Showing a cancelled job's log went fine: logs does not fail.
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("logs -f did not end with the job")
	}
	mustContain(t, "logs -f", r.out.String(),
		"tool     execute_code python: import os …\n",
		"error    tool timed out …\n",
		"memory   older steps were summarized",
		`mystery  {"x":1}`,
		"status   cancelled",
		"\nJob "+j.ID+" cancelled")
}

func TestToolPreview(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"bash", `{"command": "go test ./...\ngo vet ./..."}`, "$ go test ./... …"},
		{"bash", `{"restart": true}`, "(restart)"},
		{"str_replace_based_edit_tool", `{"command": "view", "path": "/workspace/main.go", "view_range": [1, 40]}`, "view /workspace/main.go [1,40]"},
		{"computer", `{"action": "left_click", "coordinate": [640, 400]}`, "left_click [640,400]"},
		{"computer", `{"action": "type", "text": "hello"}`, `type "hello"`},
		{"execute_code", `{"language": "typescript", "code": "const x: number = 1"}`, "typescript: const x: number = 1"},
		{"recall", `{"query": "database schema"}`, `"database schema"`},
		{"finish", `{"summary": "Done.\nDetails follow."}`, "Done. …"},
		{"custom_tool", `{"b": 2, "a": "x"}`, `{"a":"x","b":2}`},
		{"bash", `{"command": "` + strings.Repeat("x", 300) + `"}`, "$ " + strings.Repeat("x", 97) + "…"},
	}
	for _, tt := range tests {
		var raw any
		if err := json.Unmarshal([]byte(tt.input), &raw); err != nil {
			t.Fatal(err)
		}
		in, _ := raw.(map[string]any)
		if got := toolPreview(tt.name, in, raw); got != tt.want {
			t.Errorf("toolPreview(%s, %s) = %q, want %q", tt.name, tt.input, got, tt.want)
		}
	}
}

func TestFormatHelpers(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		ago  time.Duration
		want string
	}{{-time.Second, "0s"}, {42 * time.Second, "42s"}, {5*time.Minute + 59*time.Second, "5m"}, {3 * time.Hour, "3h"}, {47 * time.Hour, "47h"}, {100 * time.Hour, "4d"}} {
		if got := age(now, now.Add(-tt.ago)); got != tt.want {
			t.Errorf("age(%s) = %q, want %q", tt.ago, got, tt.want)
		}
	}
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1536, "1.5 KiB"}, {3 << 20, "3.0 MiB"}, {5 << 30, "5.0 GiB"}} {
		if got := bytesize(tt.n); got != tt.want {
			t.Errorf("bytesize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {1234567, "1,234,567"}, {-1234, "-1,234"}} {
		if got := thousands(tt.n); got != tt.want {
			t.Errorf("thousands(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	for _, tt := range []struct {
		usd  float64
		want string
	}{{0, "-"}, {0.0042, "$0.0042"}, {0.25, "$0.25"}, {12.5, "$12.50"}} {
		if got := cost(tt.usd); got != tt.want {
			t.Errorf("cost(%v) = %q, want %q", tt.usd, got, tt.want)
		}
	}
	if got := truncate("héllo wörld", 6); got != "héllo…" {
		t.Errorf("truncate = %q", got)
	}
	if got := firstLine("\n  first  \n\n second\n"); got != "first …" {
		t.Errorf("firstLine = %q", got)
	}
}
