package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// messages returns the job's user_message events.
func (b *bundle) messages(t *testing.T, id string) []*drydock.Event {
	t.Helper()
	es, err := b.store.ListEvents(t.Context(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []*drydock.Event
	for _, e := range es {
		if e.Type == drydock.EventUserMessage {
			out = append(out, e)
		}
	}
	return out
}

// A message to a pending or a running job is stored at once as a
// user_message event, sent by the token's name, and answered 202 with the
// stored event.
func TestMessageIsStoredAndAccepted(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	j := b.schedule(t, b.alice, `{"task": "build it", "interactive": true}`)
	if !j.Interactive {
		t.Errorf("the created job does not say interactive: %+v", j)
	}
	resp, data := b.do(t, "POST", "/v1/jobs/"+j.ID+"/messages", b.alice, `{"text": "use Postgres, <b>not</b> SQLite"}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("message to a pending job: %d %s", resp.StatusCode, data)
	}
	var ev drydock.Event
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != drydock.EventUserMessage || ev.Seq < 2 || ev.JobID != j.ID {
		t.Errorf("answer %s; want the stored user_message event", data)
	}
	var m drydock.UserMessage
	if err := json.Unmarshal(ev.Data, &m); err != nil || m.Text != "use Postgres, <b>not</b> SQLite" || m.From != "tok_alice" {
		t.Errorf("message data %s; want the text as sent, from the token's name", ev.Data)
	}
	if strings.Contains(string(data), b.alice) {
		t.Error("the answer carries the token's secret")
	}

	if _, err := b.store.ClaimJob(t.Context(), "w1", time.Minute); err != nil {
		t.Fatal(err)
	}
	resp, data = b.do(t, "POST", "/v1/jobs/"+j.ID+"/messages", b.admin, `{"text": "and add tests"}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("message to a running job: %d %s", resp.StatusCode, data)
	}
	got := b.messages(t, j.ID)
	if len(got) != 2 || got[0].Seq != ev.Seq {
		t.Fatalf("stored messages %v; want both, in order", got)
	}
	if err := b.store.SetWaitingFor(t.Context(), j.ID, "w1", "Which port?"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/jobs/" + j.ID, "/status/" + j.ID} {
		_, data := b.do(t, "GET", path, b.alice, "")
		if !strings.Contains(string(data), `"waiting_for":"Which port?"`) || !strings.Contains(string(data), `"interactive":true`) {
			t.Errorf("GET %s = %s; want interactive and waiting_for", path, data)
		}
	}
}

// Messages to unknown or foreign jobs are 404 as for every job route; bad
// text is a 4xx that names the problem; none of them stores anything.
func TestMessageRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	j := b.schedule(t, b.alice, `{"task": "build it"}`)
	path := "/v1/jobs/" + j.ID + "/messages"
	for _, tc := range []struct {
		name, path, token, body, ctype string
		status                         int
		code, says                     string
	}{
		{"unknown job", "/v1/jobs/01900000-0000-7000-8000-000000000000/messages", b.alice, `{"text": "hi"}`, "", 404, "not_found", "not found"},
		{"not a job id", "/v1/jobs/nope/messages", b.alice, `{"text": "hi"}`, "", 404, "not_found", "not found"},
		{"another user's job", path, b.bob, `{"text": "hi"}`, "", 404, "not_found", "not found"},
		{"no token", path, "", `{"text": "hi"}`, "", 401, "unauthorized", "bearer"},
		{"empty body", path, b.alice, ``, "", 400, "invalid", "request body is empty"},
		{"no text", path, b.alice, `{}`, "", 400, "invalid", "text is required"},
		{"empty text", path, b.alice, `{"text": ""}`, "", 400, "invalid", "text is required"},
		{"blank text", path, b.alice, `{"text": " \n\t "}`, "", 400, "invalid", "must not be blank"},
		{"NUL byte", path, b.alice, `{"text": "a\u0000b"}`, "", 400, "invalid", "NUL"},
		{"text not a string", path, b.alice, `{"text": 5}`, "", 400, "invalid", "text"},
		{"unknown field", path, b.alice, `{"text": "hi", "task": "x"}`, "", 400, "invalid", "task"},
		{"duplicate text", path, b.alice, `{"text": "hi", "text": "bye"}`, "", 400, "invalid", "duplicate"},
		{"over 64 KiB", path, b.alice, `{"text": "` + strings.Repeat("a", drydock.MaxMessageBytes+1) + `"}`, "", 413, "too_large", "65536"},
		{"body over 1 MiB", path, b.alice, `{"text": "` + strings.Repeat("a", 1<<20) + `"}`, "", 413, "too_large", "larger than"},
		{"form body", path, b.alice, `text=hi`, "application/x-www-form-urlencoded", 415, "unsupported_media_type", "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := b.doType(t, "POST", tc.path, tc.token, tc.body, tc.ctype)
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s; want %d", resp.StatusCode, data, tc.status)
			}
			if code := errorCode(t, data); code != tc.code {
				t.Errorf("code %q; want %q", code, tc.code)
			}
			if !strings.Contains(strings.ToLower(string(data)), strings.ToLower(tc.says)) {
				t.Errorf("message %s does not say %q", data, tc.says)
			}
		})
	}
	if got := b.messages(t, j.ID); len(got) != 0 {
		t.Errorf("refused messages stored %d events", len(got))
	}
}

// A finished job takes no message into its log: until follow-ups exist
// the answer is 409 and nothing is stored.
func TestMessageToFinishedJob(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	j := b.schedule(t, b.alice, `{"task": "build it"}`)
	if _, err := b.store.CancelJob(t.Context(), j.ID); err != nil {
		t.Fatal(err)
	}
	before, _ := b.store.ListEvents(t.Context(), j.ID, 0, 1000)
	resp, data := b.do(t, "POST", "/v1/jobs/"+j.ID+"/messages", b.alice, `{"text": "now add dark mode"}`)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("message to a cancelled job: %d %s; want 409", resp.StatusCode, data)
	}
	after, _ := b.store.ListEvents(t.Context(), j.ID, 0, 1000)
	if len(after) != len(before) {
		t.Errorf("the refused message left %d events; want %d", len(after), len(before))
	}
}

// doType is do with a Content-Type of the caller's ("" for JSON).
func (b *bundle) doType(t *testing.T, method, path, token, body, ctype string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, b.url+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype == "" {
		ctype = "application/json"
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}
