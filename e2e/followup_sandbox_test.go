package e2e_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// Follow-ups on a real sandbox with the scripted model: a message to a
// finished job starts a follow-up that sees the parent's files (restored
// into a fresh sandbox) and its conversation (the first model request
// holds the parent's task and turns, then the new message); its archive
// holds the parent's files and its own, its diff is against the parent's
// result, and a follow-up of the follow-up sees both earlier jobs. On
// Docker and on Podman.
func TestFollowUpInSandbox(t *testing.T) {
	t.Parallel()
	for _, eng := range engines() {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			followUpInSandbox(t, eng.name, eng.env)
		})
	}
}

func followUpInSandbox(t *testing.T, engine, engineEnv string) {
	e := newAgentEnv(t, engine, engineEnv, "openai", llmtest.Options{Turns: []llmtest.Turn{
		// The parent.
		{Text: "Writing the parent's notes.", ToolCalls: []llm.ToolCall{
			llmtest.Call("str_replace_based_edit_tool", `{"command": "create", "path": "/workspace/notes.txt", "file_text": "parent line\n"}`),
		}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "parent wrote notes.txt"}`)}},
		// The follow-up.
		{Text: "Continuing in the parent's workspace.", ToolCalls: []llm.ToolCall{
			llmtest.Call("bash", `{"command": "cat notes.txt && echo 'child line' >> notes.txt && echo mine > child.txt"}`),
		}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "child added a line"}`)}},
		// The follow-up of the follow-up.
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "cat notes.txt child.txt"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "grandchild read both"}`)}},
	}})
	parentID, parent := e.run(`{"task": "Write notes.txt with a parent line.", "max_steps": 5}`, 2*time.Minute)
	if parent.Status != drydock.StatusComplete {
		t.Fatalf("parent: %s %q\n%s", parent.Status, parent.Error, e.logs)
	}

	childID, child := e.followUp(parentID, `{"text": "Now add a child line to notes.txt.", "max_steps": 3}`)
	if child.Status != drydock.StatusComplete || child.ParentJobID != parentID || child.Steps != 2 || child.Summary != "child added a line" {
		t.Fatalf("follow-up: %s parent=%q steps=%d summary=%q err=%q\n%s", child.Status, child.ParentJobID, child.Steps, child.Summary, child.Error, e.logs)
	}
	reqs := e.model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests after two jobs; want 4", len(reqs))
	}
	// The follow-up's first prompt: the parent's conversation, then the
	// message; and the parent's file in its workspace.
	first := reqs[2]
	if !strings.Contains(first.Messages[0].Text, "Write notes.txt with a parent line.") {
		t.Errorf("the follow-up's first message is %q; want the parent's task", first.Messages[0].Text)
	}
	prompt := promptText(first.Messages)
	for _, want := range []string{"Writing the parent's notes.", "File created successfully at: /workspace/notes.txt", "parent wrote notes.txt", "Now add a child line to notes.txt."} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the follow-up's first prompt lacks %q:\n%s", want, prompt)
		}
	}
	if last := first.LastUser(); !strings.Contains(last.Text, "Now add a child line to notes.txt.") {
		t.Errorf("the follow-up's first prompt does not end with the message: %q", last.Text)
	}
	wasFed(t, reqs, 4, ok("parent line"))

	files := e.archive(childID)
	if files["notes.txt"] != "parent line\nchild line\n" || files["child.txt"] != "mine\n" {
		t.Errorf("the follow-up's archive: notes.txt %q, child.txt %q; want the parent's file with the child's line, and the child's own", files["notes.txt"], files["child.txt"])
	}
	code, diff := e.do("GET", "/v1/jobs/"+childID+"/diff", "", "")
	if code != 200 || !strings.Contains(string(diff), "+child line") || strings.Contains(string(diff), "+parent line") ||
		!strings.Contains(string(diff), "diff --git a/notes.txt b/notes.txt\nindex ") {
		t.Errorf("the follow-up's diff is not against the parent's result: %d\n%s", code, diff)
	}
	if p := e.status(parentID); !slices.Equal(p.FollowUps, []string{childID}) {
		t.Errorf("the parent's follow_ups = %v; want [%s]", p.FollowUps, childID)
	}

	grandID, grand := e.followUp(childID, `{"text": "Read both files."}`)
	if grand.Status != drydock.StatusComplete || grand.ParentJobID != childID {
		t.Fatalf("follow-up of the follow-up: %s parent=%q err=%q\n%s", grand.Status, grand.ParentJobID, grand.Error, e.logs)
	}
	reqs = e.model.Requests()
	prompt = promptText(reqs[4].Messages)
	order := []string{"Write notes.txt with a parent line.", "Writing the parent's notes.", "Now add a child line to notes.txt.", "Continuing in the parent's workspace.", "Read both files."}
	for i := 1; i < len(order); i++ {
		if a, b := strings.Index(prompt, order[i-1]), strings.Index(prompt, order[i]); a < 0 || b < 0 || a > b {
			t.Errorf("%q should come before %q in the second follow-up's first prompt:\n%s", order[i-1], order[i], prompt)
		}
	}
	wasFed(t, reqs, 6, ok("parent line\nchild line\nmine"))
	if files := e.archive(grandID); files["notes.txt"] != "parent line\nchild line\n" || files["child.txt"] != "mine\n" {
		t.Errorf("the second follow-up's archive lacks the earlier jobs' files: %v", files)
	}
	e.noSandboxLeft(childID)
	e.noSandboxLeft(grandID)
}

// followUp sends a message to a finished job and waits for the follow-up
// it creates to end.
func (e *agentEnv) followUp(parent, body string) (string, *drydock.Job) {
	e.t.Helper()
	code, data := e.do("POST", "/v1/jobs/"+parent+"/messages", "", body)
	if code != 201 {
		e.t.Fatalf("follow-up of %s: %d %s", parent, code, data)
	}
	var j drydock.Job
	if err := json.Unmarshal(data, &j); err != nil {
		e.t.Fatal(err)
	}
	got, _ := e.waitTerminal(j.ID, 2*time.Minute)
	return j.ID, got
}

// promptText is every text of a conversation, in order.
func promptText(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Text + "\n")
		for _, c := range m.ToolCalls {
			b.Write(c.Input)
			b.WriteString("\n")
		}
		for _, r := range m.ToolResults {
			b.WriteString(r.Output + "\n")
		}
	}
	return b.String()
}

// A follow-up whose server is killed (SIGKILL) mid-step resumes after the
// restart from the same place: its workspace is not restored again over
// its own work, its prompt still holds the parent's conversation and the
// message once, and only its own steps count.
func TestFollowUpResumesAfterKill9(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "openai", llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo parent > notes.txt"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "parent done"}`)}},
		{Text: "Working on the follow-up.", ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo child >> notes.txt && sleep 30"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "cat notes.txt"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "child done"}`)}},
	}})
	parentID, parent := e.run(`{"task": "Start the notes."}`, 2*time.Minute)
	if parent.Status != drydock.StatusComplete {
		t.Fatalf("parent: %s %q\n%s", parent.Status, parent.Error, e.logs)
	}
	code, data := e.do("POST", "/v1/jobs/"+parentID+"/messages", "", `{"text": "Add a child line."}`)
	if code != 201 {
		t.Fatalf("follow-up: %d %s", code, data)
	}
	var child drydock.Job
	json.Unmarshal(data, &child)
	// Kill the server while the follow-up's first command runs.
	deadline := time.Now().Add(time.Minute)
	for len(e.model.Requests()) < 3 || !slices.ContainsFunc(e.events(child.ID), func(ev *drydock.Event) bool { return ev.Type == drydock.EventToolCall }) {
		if time.Now().After(deadline) {
			t.Fatalf("the follow-up's first command did not start\n%s", e.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the echo has run; the sleep holds the shell
	e.kill()
	e.start()
	got, _ := e.waitTerminal(child.ID, 2*time.Minute)
	if got.Status != drydock.StatusComplete || got.Steps != 3 || got.Summary != "child done" {
		t.Fatalf("resumed follow-up: %s steps=%d summary=%q err=%q\n%s", got.Status, got.Steps, got.Summary, got.Error, e.logs)
	}
	reqs := e.model.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests; want 5", len(reqs))
	}
	prompt := promptText(reqs[3].Messages)
	if !strings.Contains(reqs[3].Messages[0].Text, "Start the notes.") || strings.Count(prompt, "Add a child line.") != 1 {
		t.Errorf("the resumed follow-up's prompt lacks the parent's task or does not hold the message once:\n%s", prompt)
	}
	wasFed(t, reqs, 4, failed("interrupted by a restart"))
	// Restored once: the child's line, written before the kill, is still there.
	wasFed(t, reqs, 5, ok("parent\nchild"))
	var steps []int
	for _, ev := range e.events(child.ID) {
		if ev.Type == drydock.EventModel {
			var m struct {
				Step int `json:"step"`
			}
			json.Unmarshal(ev.Data, &m)
			steps = append(steps, m.Step)
		}
	}
	if !slices.Equal(steps, []int{3, 4, 5}) {
		t.Errorf("the follow-up's steps are numbered %v; want [3 4 5], after the parent's two", steps)
	}
}
