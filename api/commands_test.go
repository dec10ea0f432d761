package api_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
)

// A job scheduled with agent "none" is a sandbox held for its caller:
// commands run in a persistent shell (output masked for the job's secrets),
// files are written into the workspace, and both are recorded in the
// job's log.
func TestHeldSandboxRunsCommandsAndWritesFiles(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, withSecrets(newBox(t)))
	ws := t.TempDir()
	sb := startToolbox(t, "sb-held", ws, nil)
	j := b.runningJob(t, b.alice, `{"agent": "none", "secrets": {"API_KEY": "`+apiCanary+`"}}`, sb)
	if j.Agent != drydock.AgentNone || j.Task != "" {
		t.Fatalf("created job: agent %q task %q; want agent none without a task", j.Agent, j.Task)
	}
	base := "/v1/jobs/" + j.ID

	resp, data := b.send(t, "PUT", base+"/files/src/hello.sh", b.alice, `{"text": "echo hello from $(pwd)\necho `+apiCanary+`\n"}`)
	var wf api.WrittenFile
	if resp.StatusCode != 200 || json.Unmarshal(data, &wf) != nil || wf.Path != "src/hello.sh" || wf.JobID != j.ID {
		t.Fatalf("write file: %d %s", resp.StatusCode, data)
	}
	if got, err := os.ReadFile(filepath.Join(ws, "src", "hello.sh")); err != nil || !strings.HasPrefix(string(got), "echo hello") {
		t.Fatalf("the workspace holds %q (%v)", got, err)
	}

	run := func(body string) (int, api.CommandResult, []byte) {
		t.Helper()
		resp, data := b.send(t, "POST", base+"/commands", b.alice, body)
		var res api.CommandResult
		if resp.StatusCode == 200 {
			if err := json.Unmarshal(data, &res); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, res, data
	}
	code, res, data := run(`{"command": "cd src && bash hello.sh"}`)
	if code != 200 || res.ExitCode != 0 || !strings.Contains(res.Output, "hello from") || res.JobID != j.ID {
		t.Fatalf("command: %d %s", code, data)
	}
	if strings.Contains(res.Output, apiCanary) || !strings.Contains(res.Output, strings.Repeat("*", len(apiCanary))) {
		t.Errorf("the secret was not masked in the output: %q", res.Output)
	}
	// The sandbox's own credentials are masked too, as in the agent's output.
	if code, res, data = run(`{"command": "echo token=tb-sb-held"}`); code != 200 || strings.Contains(res.Output, "tb-sb-held") {
		t.Errorf("the toolbox token came back: %d %s", code, data)
	}
	// The shell persists: the cd above still holds.
	if code, res, data = run(`{"command": "basename $(pwd); exit 3"}`); code != 200 || strings.TrimSpace(res.Output) != "src" || res.ExitCode != 3 {
		t.Errorf("second command: %d %s; want output src and exit code 3", code, data)
	}

	for _, c := range []struct{ name, method, path, body, want string }{
		{"blank command", "POST", "/commands", `{"command": "  "}`, "command is required"},
		{"unknown field", "POST", "/commands", `{"cmd": "ls"}`, "cmd"},
		{"timeout too long", "POST", "/commands", `{"command": "ls", "timeout": "2h"}`, "timeout"},
		{"traversal", "PUT", "/files/../etc/passwd", `{"text": "x"}`, "'..'"},
		{"encoded traversal", "PUT", "/files/a/..%2f..%2fx", `{"text": "x"}`, ".."},
		{"no path", "PUT", "/files/", `{"text": "x"}`, "name the file"},
		{"no text", "PUT", "/files/a.txt", `{}`, "text is required"},
	} {
		resp, data := b.send(t, c.method, base+c.path, b.alice, c.body)
		if resp.StatusCode != 400 || !strings.Contains(string(data), c.want) {
			t.Errorf("%s: %d %s; want 400 naming %q", c.name, resp.StatusCode, data, c.want)
		}
	}
	if resp, data := b.send(t, "POST", base+"/commands", b.bob, `{"command": "id"}`); resp.StatusCode != 404 {
		t.Errorf("another user's held sandbox: %d %s; want 404", resp.StatusCode, data)
	}
	if resp, data := b.send(t, "POST", base+"/messages", b.alice, `{"text": "hi"}`); resp.StatusCode != 409 || !strings.Contains(string(data), "no agent") {
		t.Errorf("message to a job without an agent: %d %s; want 409", resp.StatusCode, data)
	}

	evs, err := b.store.ListEvents(t.Context(), j.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var cmds, writes int
	for _, e := range evs {
		s := string(e.Data)
		if strings.Contains(s, apiCanary) {
			t.Errorf("an event holds the secret: %s", s)
		}
		if strings.Contains(s, `"kind":"caller_command"`) {
			cmds++
		}
		if strings.Contains(s, `"kind":"caller_write"`) {
			writes++
		}
	}
	if cmds != 3 || writes != 1 {
		t.Errorf("the log records %d commands and %d writes; want 3 and 1", cmds, writes)
	}
}

// Commands and writes are refused for a job with an agent (its sandbox is
// the agent's) and for one that has ended.
func TestCommandsNeedAHeldRunningSandbox(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	sb := startToolbox(t, "sb-agent", t.TempDir(), nil)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, sb)
	resp, data := b.send(t, "POST", "/v1/jobs/"+j.ID+"/commands", b.alice, `{"command": "id"}`)
	if resp.StatusCode != 409 || !strings.Contains(string(data), "has an agent") {
		t.Errorf("command to an agent's sandbox: %d %s; want 409", resp.StatusCode, data)
	}
	b.finish(t, j.ID, drydock.StatusComplete, nil)
	held := b.create(t, b.alice, `{"agent": "none"}`)
	resp, data = b.send(t, "PUT", "/v1/jobs/"+held.ID+"/files/a.txt", b.alice, `{"text": "x"}`)
	if resp.StatusCode != 409 || !strings.Contains(string(data), "not started") {
		t.Errorf("write to a pending held job: %d %s; want 409", resp.StatusCode, data)
	}
	for _, body := range []string{`{"agent": "codex"}`, `{"agent": "none", "interactive": true}`, `{"agent": ""}`} {
		if resp, data := b.send(t, "POST", "/v1/jobs", b.alice, body); resp.StatusCode != 400 {
			t.Errorf("create %s: %d %s; want 400", body, resp.StatusCode, data)
		}
	}
}

// Credential-shaped text in a held sandbox's command output is masked,
// declared as a secret or not, as in the agent's tool output; so is a
// credential the caller typed into the command, in the job's log.
func TestHeldSandboxMasksCredentialShapes(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	sb := startToolbox(t, "sb-shapes", t.TempDir(), nil)
	j := b.runningJob(t, b.alice, `{"agent": "none"}`, sb)
	const openai, github = "sk-proj-abcdefghijklmnopqrstuvwxyz012345", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	body, _ := json.Marshal(map[string]string{"command": "echo key=" + openai + "; echo token " + github + "; echo done"})
	resp, data := b.send(t, "POST", "/v1/jobs/"+j.ID+"/commands", b.alice, string(body))
	var res api.CommandResult
	if resp.StatusCode != 200 || json.Unmarshal(data, &res) != nil {
		t.Fatalf("command: %d %s", resp.StatusCode, data)
	}
	if strings.Contains(res.Output, openai) || strings.Contains(res.Output, github) {
		t.Errorf("a credential-shaped string came back: %q", res.Output)
	}
	if want := "key=[REDACTED]\ntoken [REDACTED]\ndone\n"; res.Output != want {
		t.Errorf("output %q; want %q", res.Output, want)
	}
	evs, err := b.store.ListEvents(t.Context(), j.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if s := string(e.Data); strings.Contains(s, openai) || strings.Contains(s, github) {
			t.Errorf("the job's log holds a credential: %s", s)
		}
		if !json.Valid(e.Data) {
			t.Errorf("an event is not valid JSON after masking: %s", e.Data)
		}
	}
}
