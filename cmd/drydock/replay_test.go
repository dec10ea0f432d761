package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/tools"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/client"
	"github.com/drydockhq/drydock/llm"
)

type replayCLI struct {
	Globals
	Replay ReplayCmd `cmd:""`
}

// replayRun runs `drydock replay args...` and returns its output.
func replayRun(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var c replayCLI
	var out, errb syncBuffer
	c.Out, c.Err, c.In = &out, &errb, strings.NewReader(stdin)
	parser, err := kong.New(&c, kong.Name("drydock"), kong.Exit(func(int) { t.Fatalf("kong exited on %q", args) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := parser.Parse(append([]string{"replay"}, args...))
	if err != nil {
		return "", "", err
	}
	err = ctx.Run(&c.Globals)
	return out.String(), errb.String(), err
}

// trajectory builds a trajectory the way the agent records one: a model
// turn, then per call a tool_call event and (unless obs is nil) its
// observation.
type trajectory struct {
	tr   drydock.Trajectory
	step int
}

func newTrajectory(id string) *trajectory {
	return &trajectory{tr: drydock.Trajectory{Format: drydock.TrajectoryFormat, Job: &drydock.Job{ID: id, Status: drydock.StatusComplete, JobSpec: drydock.JobSpec{Task: "test task", Profile: drydock.ProfileHeadless}}}}
}

func (b *trajectory) event(typ drydock.EventType, v any) {
	data, _ := json.Marshal(v)
	b.tr.Events = append(b.tr.Events, &drydock.Event{Seq: int64(len(b.tr.Events) + 1), JobID: b.tr.Job.ID, Type: typ, Data: data})
}

// call records one turn with one call; obs nil leaves it unanswered.
func (b *trajectory) call(name, input string, obs *transcript.Observation) {
	b.step++
	id := fmt.Sprintf("call_%d", b.step)
	b.event(drydock.EventModel, transcript.ModelTurn{Step: b.step, ToolCalls: []llm.ToolCall{{ID: id, Name: name, Input: json.RawMessage(input)}}})
	b.event(drydock.EventToolCall, transcript.ToolCall{Step: b.step, ID: id, Name: name, Input: json.RawMessage(input)})
	if obs != nil {
		obs.Step, obs.ID, obs.Name = b.step, id, name
		b.event(drydock.EventObservation, obs)
	}
}

func (b *trajectory) write(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trajectory.json")
	data, _ := json.Marshal(b.tr)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// sampleTrajectory has one call of every kind of outcome.
func sampleTrajectory() *trajectory {
	b := newTrajectory("0193aaaa-0000-7000-8000-000000000001")
	b.call("str_replace_based_edit_tool", `{"command": "create", "path": "/workspace/notes/hello.txt", "file_text": "hello world"}`,
		&transcript.Observation{Output: "File created successfully at: /workspace/notes/hello.txt"})
	b.call("bash", `{"command": "cat notes/hello.txt"}`, &transcript.Observation{Output: "hello world"})
	b.call("bash", `{"command": "echo build took 1.5s at 2026-11-22T10:00:00Z"}`,
		&transcript.Observation{Output: "build took 12.25s at 2025-01-01T08:30:00Z"})
	b.call("bash", `{"command": "echo actual"}`, &transcript.Observation{Output: "expected"})
	var head, tail strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintln(&head, i)
	}
	for i := 4801; i <= 5000; i++ {
		fmt.Fprintln(&tail, i)
	}
	b.call("bash", `{"command": "seq 1 5000"}`, &transcript.Observation{Truncated: true, OutputPath: ".drydock/outputs/step-0005-call_5.txt",
		Output: strings.TrimSuffix(head.String(), "\n") + "\n[... 23893 bytes cut; the whole output is in .drydock/outputs/step-0005-call_5.txt ...]\n" + strings.TrimSuffix(tail.String(), "\n")})
	b.call("recall", `{"query": "hello"}`, &transcript.Observation{Output: "step 1 ..."})
	b.call("str_replace_based_edit_tool", `{"command": "view", "path": "/workspace/missing.txt"}`,
		&transcript.Observation{Output: "The path /workspace/missing.txt does not exist. Please provide a valid path.", IsError: true})
	b.call("bash", `{"command": "echo late > late.txt && echo done"}`, nil)
	b.call("finish", `{"summary": "done"}`, &transcript.Observation{Output: "The task is finished.", Summary: "done"})
	return b
}

// A recorded trajectory replayed in a local sandbox: the files come back,
// and every call is reported as it compares.
func TestReplayLocalKeep(t *testing.T) {
	t.Parallel()
	b := sampleTrajectory()
	dataDir := t.TempDir()
	out, _, err := replayRun(t, "", b.write(t), "--runtime", "local", "--data-dir", dataDir, "--keep", "--json")
	if err == nil || !strings.Contains(err.Error(), "1 of 9 replayed calls differ") {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	var r replayReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json printed %q: %v", out, err)
	}
	want := []string{replayMatch, replayMatch, replayNormalised, replayDiffers, replayMatch, replaySkipped, replayMatch, replayUnrecorded, replaySkipped}
	var got []string
	for _, s := range r.Steps {
		got = append(got, s.Result)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		for _, s := range r.Steps {
			t.Logf("step %d %s: %s (%s) replayed %+v", s.Step, s.Name, s.Result, s.Reason, s.Replayed)
		}
		t.Fatalf("results %v, want %v", got, want)
	}
	if r.Match != 4 || r.Normalised != 1 || r.Differs != 1 || r.Skipped != 2 || r.Unrecorded != 1 || r.JobID != b.tr.Job.ID {
		t.Errorf("report counts: %+v", r)
	}
	if s := r.Steps[3]; !strings.Contains(s.Reason, `recorded "expected", replayed "actual"`) {
		t.Errorf("the difference is not named: %q", s.Reason)
	}
	if !r.Sandbox.Kept || r.Sandbox.Runtime != "local" || !strings.HasPrefix(r.Sandbox.Workspace, dataDir) || len(r.Sandbox.Reach) == 0 {
		t.Fatalf("sandbox: %+v", r.Sandbox)
	}
	for name, want := range map[string]string{"notes/hello.txt": "hello world", "late.txt": "late\n"} {
		if b, err := os.ReadFile(filepath.Join(r.Sandbox.Workspace, name)); err != nil || string(b) != want {
			t.Errorf("%s in the kept workspace: %q %v", name, b, err)
		}
	}
}

// Without --keep the sandbox goes, and the human report names the steps.
func TestReplayLocalHuman(t *testing.T) {
	t.Parallel()
	b := newTrajectory("0193aaaa-0000-7000-8000-000000000002")
	b.call("bash", `{"command": "echo hi > hi.txt && cat hi.txt"}`, &transcript.Observation{Output: "hi"})
	b.call("bash", `{"command": "sleep 0.1; echo elapsed: 0.1s"}`, &transcript.Observation{Output: "elapsed: 3.7s"})
	b.call("finish", `{"summary": "ok"}`, &transcript.Observation{Output: "The task is finished."})
	dataDir := t.TempDir()
	data, _ := json.Marshal(b.tr)
	out, _, err := replayRun(t, string(data), "-", "--runtime", "local", "--data-dir", dataDir)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	for _, want := range []string{
		"Replaying 3 tool calls of job " + b.tr.Job.ID,
		"echo hi > hi.txt && cat hi.txt",
		"match (normalised)",
		"skipped",
		"finish ends the job",
		"3 calls: 2 match (1 of them after normalising), 0 differ, 1 skipped, 0 not recorded.",
		"The sandbox was destroyed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if left, _ := os.ReadDir(filepath.Join(dataDir, "sandboxes")); len(left) != 0 {
		t.Errorf("sandboxes left: %v", left)
	}
}

// --job fetches the trajectory from the server with the CLI's token; a job
// the server does not know is named in the error.
func TestReplayFetchesJob(t *testing.T) {
	t.Parallel()
	b := newTrajectory("0193aaaa-0000-7000-8000-000000000003")
	b.call("bash", `{"command": "echo fetched"}`, &transcript.Observation{Output: "fetched"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer ddk_test":
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error": {"code": "unauthorized", "message": "bad token"}}`)
		case r.URL.Path == "/v1/jobs/"+b.tr.Job.ID+"/trajectory":
			json.NewEncoder(w).Encode(b.tr)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error": {"code": "not_found", "message": "no such job"}}`)
		}
	}))
	defer srv.Close()
	base := []string{"--url", srv.URL, "--token", "ddk_test", "--runtime", "local", "--data-dir", t.TempDir()}
	out, _, err := replayRun(t, "", append(base, "--job", b.tr.Job.ID, "--json")...)
	if err != nil {
		t.Fatalf("replay --job: %v\n%s", err, out)
	}
	var r replayReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Steps) != 1 || r.Steps[0].Result != replayMatch {
		t.Fatalf("report %s: %v", out, err)
	}
	if _, _, err := replayRun(t, "", append(base, "--job", "nope")...); err == nil || !strings.Contains(err.Error(), "job nope not found") {
		t.Errorf("unknown job: %v", err)
	}
	base[3] = "wrong"
	if _, _, err := replayRun(t, "", append(base, "--job", b.tr.Job.ID)...); err == nil || !strings.Contains(err.Error(), "rejected the token") {
		t.Errorf("wrong token: %v", err)
	}
}

func TestReplayRefusesBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notTrajectory := filepath.Join(dir, "job.json")
	os.WriteFile(notTrajectory, []byte(`{"job_id": "x", "status": "complete"}`), 0o600)
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte(`{"format": "drydock.trajectory/v1", "events": [`), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give a trajectory file"},
		{[]string{broken, "--job", "x"}, "give a trajectory file"},
		{[]string{notTrajectory}, "is not a drydock.trajectory/v1 trajectory"},
		{[]string{broken}, "read " + broken},
		{[]string{filepath.Join(dir, "missing.json")}, "no such file"},
	} {
		_, _, err := replayRun(t, "", append(tc.args, "--runtime", "local", "--data-dir", dir)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("replay %v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestCompareObservation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		recorded transcript.Observation
		replayed tools.Result
		want     string
	}{
		{"same", transcript.Observation{Output: "a\nb"}, tools.Result{Output: "a\nb"}, replayMatch},
		{"error flag", transcript.Observation{Output: "x", IsError: true}, tools.Result{Output: "x"}, replayDiffers},
		{"durations", transcript.Observation{Output: "ok in 1.2s (12ms per test)"}, tools.Result{Output: "ok in 0.9s (9ms per test)"}, replayNormalised},
		{"time command", transcript.Observation{Output: "real\t0m0.013s"}, tools.Result{Output: "real\t0m1.200s"}, replayNormalised},
		{"timestamps and uuids", transcript.Observation{Output: "2026-01-02 03:04:05 job 0193aaaa-0000-7000-8000-000000000001"}, tools.Result{Output: "2027-11-12 13:14:15 job 0193bbbb-0000-7000-8000-000000000009"}, replayNormalised},
		{"node test durations", transcript.Observation{Output: "  duration_ms: 2.221016"}, tools.Result{Output: "  duration_ms: 0.5"}, replayNormalised},
		{"background pid", transcript.Observation{Output: "[1] 4242"}, tools.Result{Output: "[1] 77"}, replayNormalised},
		{"python address", transcript.Observation{Output: "<object at 0x7f3a2b1c9d00>"}, tools.Result{Output: "<object at 0x7f00aa001100>"}, replayNormalised},
		{"trailing space", transcript.Observation{Output: "a  \nb\n"}, tools.Result{Output: "a\nb"}, replayNormalised},
		{"counts are not volatile", transcript.Observation{Output: "# pass 6"}, tools.Result{Output: "# pass 5"}, replayDiffers},
		{"image note", transcript.Observation{Output: "Screenshot of the screen (1280x800).\n[The image was saved to .drydock/screenshots/step-0001-c-1.png; this model is not shown images.]", Images: []transcript.ImageRef{{Path: "p"}}},
			tools.Result{Output: "Screenshot of the screen (1280x800).", Images: []tools.Image{{}}}, replayMatch},
		{"image count", transcript.Observation{Output: "x", Images: []transcript.ImageRef{{Path: "p"}}}, tools.Result{Output: "x"}, replayDiffers},
		{"cut output", transcript.Observation{Truncated: true, Output: "head\n[... 99 bytes cut; the whole output is in f ...]\ntail"}, tools.Result{Output: "head and a long middle tail"}, replayMatch},
		{"cut output differs", transcript.Observation{Truncated: true, Output: "head\n[... 99 bytes cut; the whole output is in f ...]\ntail"}, tools.Result{Output: "other"}, replayDiffers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := compareObservation(&tc.recorded, tc.replayed)
			if got != tc.want {
				t.Errorf("compare = %s (%s), want %s", got, reason, tc.want)
			}
		})
	}
}

func TestRecordedCallsFromModelTurns(t *testing.T) {
	t.Parallel()
	// A log without tool_call events: the calls come from the model turns.
	b := newTrajectory("j")
	b.event(drydock.EventModel, transcript.ModelTurn{Step: 1, ToolCalls: []llm.ToolCall{
		{ID: "a", Name: "bash", Input: json.RawMessage(`{"command": "true"}`)},
		{ID: "b", Name: "finish", Input: json.RawMessage(`{"summary": "s"}`)},
	}})
	b.event(drydock.EventObservation, transcript.Observation{Step: 1, ID: "b", Name: "finish", Output: "done"})
	b.event(drydock.EventObservation, transcript.Observation{Step: 1, ID: "a", Name: "bash", Output: "(no output)"})
	calls := recordedCalls(b.tr.Events)
	if len(calls) != 2 || calls[0].call.ID != "a" || calls[0].obs == nil || calls[0].obs.Output != "(no output)" || calls[1].obs.Output != "done" {
		t.Fatalf("calls: %+v", calls)
	}
}

// A job that started from a repository's clone replays from an empty
// workspace unless --seed gives the files it started from: the CLI says
// so, and a seed directory (with its .git) or a tar.gz puts them there
// before the first call. A zip or a missing path is refused before a
// sandbox is made.
func TestReplaySeed(t *testing.T) {
	t.Parallel()
	b := newTrajectory("0193aaaa-0000-7000-8000-000000000003")
	b.tr.Job.Repo = &drydock.RepoSpec{URL: "https://git.example.com/team/app.git", Ref: "main"}
	b.event(drydock.EventLog, map[string]any{"level": "info", "kind": "repo_cloned", "commit": "0123456789abcdef0123456789abcdef01234567"})
	b.call("bash", `{"command": "cat README.md && test -d .git && echo has-git"}`, &transcript.Observation{Output: "# app\nhas-git"})
	path := b.write(t)

	out, errOut, err := replayRun(t, "", path, "--runtime", "local", "--data-dir", t.TempDir())
	if err == nil || !strings.Contains(errOut, "warning: job 0193aaaa-0000-7000-8000-000000000003 started from a clone of https://git.example.com/team/app.git at commit 0123456789abcdef0123456789abcdef01234567") ||
		!strings.Contains(errOut, "--seed DIR|FILE") {
		t.Errorf("without --seed: %v\nstdout %s\nstderr %s", err, out, errOut)
	}

	seed := t.TempDir()
	os.WriteFile(filepath.Join(seed, "README.md"), []byte("# app\n"), 0o644)
	os.MkdirAll(filepath.Join(seed, ".git"), 0o755)
	os.WriteFile(filepath.Join(seed, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	out, errOut, err = replayRun(t, "", path, "--runtime", "local", "--data-dir", t.TempDir(), "--seed", seed)
	if err != nil || !strings.Contains(out, "Seeded the workspace with 2 files") || strings.Contains(errOut, "warning") {
		t.Errorf("--seed DIR: %v\nstdout %s\nstderr %s", err, out, errOut)
	}

	var tgz bytes.Buffer
	if _, err := client.PackDir(&tgz, seed, client.PackOptions{IncludeGit: true}); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "start.tar.gz")
	os.WriteFile(archive, tgz.Bytes(), 0o644)
	if out, errOut, err = replayRun(t, "", path, "--runtime", "local", "--data-dir", t.TempDir(), "--seed", archive); err != nil {
		t.Errorf("--seed FILE: %v\nstdout %s\nstderr %s", err, out, errOut)
	}

	zip := filepath.Join(t.TempDir(), "start.zip")
	os.WriteFile(zip, []byte("PK\x03\x04 not really"), 0o644)
	for arg, want := range map[string]string{zip: "is a zip archive: give a tar or tar.gz", filepath.Join(seed, "nope"): "--seed: stat"} {
		dataDir := t.TempDir()
		if _, _, err := replayRun(t, "", path, "--runtime", "local", "--data-dir", dataDir, "--seed", arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--seed %s: %v, want %q", arg, err, want)
		}
		if left, _ := os.ReadDir(filepath.Join(dataDir, "sandboxes")); len(left) != 0 {
			t.Errorf("--seed %s made a sandbox", arg)
		}
	}
}
