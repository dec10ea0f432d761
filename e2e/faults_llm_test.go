package e2e_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// The model endpoint drops the connection in the middle of its answers (a
// 200 whose body ends half way). A job whose cut answers are followed by a
// whole one completes as if nothing happened; a job whose every retry is cut
// off ends in error saying the model API failed, keeps the work done before,
// and leaves no sandbox behind. Both wire formats, on the real SDK clients.
func TestFaultModelAnswersCutOff(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider+"/retried", func(t *testing.T) {
			t.Parallel()
			cut := llmtest.Turn{Text: "this answer never arrives whole", Fault: llmtest.Cut}
			e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", provider, llmtest.Options{Turns: []llmtest.Turn{
				cut, cut,
				{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo survived > ok.txt && cat ok.txt"}`)}},
				cut,
				{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Done despite the cuts."}`)}},
			}})
			t0 := time.Now()
			id, j := e.run(`{"task": "Write ok.txt."}`, 2*time.Minute)
			if j.Status != drydock.StatusComplete || j.Steps != 2 || j.Summary != "Done despite the cuts." {
				t.Fatalf("job: %s steps=%d %q\n%s", j.Status, j.Steps, j.Error, e.logs)
			}
			reqs := e.model.Requests()
			if len(reqs) != 5 {
				t.Fatalf("the model got %d requests, want 5 (3 retried after a cut answer)", len(reqs))
			}
			// A retry repeats the conversation; nothing of a cut answer
			// reached the job's log or the next prompt.
			if !bytes.Equal(reqs[0].Body, reqs[2].Body) || !bytes.Equal(reqs[3].Body, reqs[4].Body) {
				t.Error("a retried request differs from the first attempt")
			}
			for _, ev := range e.events(id) {
				if bytes.Contains(ev.Data, []byte("never arrives whole")) {
					t.Errorf("part of a cut answer reached the log: %s %s", ev.Type, ev.Data)
				}
			}
			wasFed(t, reqs, 4, ok("survived"))
			if got := e.archive(id)["ok.txt"]; got != "survived\n" {
				t.Errorf("ok.txt = %q", got)
			}
			e.noSandboxLeft(id)
			t.Logf("%s: 3 cut answers retried; job complete in %s", provider, time.Since(t0).Round(time.Millisecond))
		})

		t.Run(provider+"/exhausted", func(t *testing.T) {
			t.Parallel()
			// The providers retry 5 times by default: six cut answers in a
			// row exhaust them.
			turns := []llmtest.Turn{{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo draft > partial.txt"}`)}}}
			turns = append(turns, llmtest.Repeat(6, llmtest.Turn{Text: "cut", Fault: llmtest.Cut})...)
			e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", provider, llmtest.Options{Turns: turns})
			t0 := time.Now()
			id, j := e.run(`{"task": "Write partial.txt."}`, 3*time.Minute)
			took := time.Since(t0)
			if j.Status != drydock.StatusError || !strings.Contains(j.Error, "API") || !strings.Contains(j.Error, "after retries") {
				t.Fatalf("job: %s %q; want an error saying the model API failed after retries\n%s", j.Status, j.Error, e.logs)
			}
			if n := len(e.model.Requests()); n != 7 {
				t.Errorf("the model got %d requests, want 7 (1 answered, then 1 + 5 retries)", n)
			}
			if j.Steps != 1 || j.DownloadURL == "" {
				t.Errorf("steps=%d download=%q; the step done before the cuts must be kept", j.Steps, j.DownloadURL)
			}
			if got := e.archive(id)["partial.txt"]; got != "draft\n" {
				t.Errorf("partial.txt in the archive = %q", got)
			}
			e.noSandboxLeft(id)
			t.Logf("%s: 6 cut answers in a row; job ended %s after %s: %s", provider, j.Status, took.Round(time.Millisecond), j.Error)
		})
	}
}
