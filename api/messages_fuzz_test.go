package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// FuzzMessage: whatever the body of a message to a pending job, the answer
// is 202 with exactly one stored user_message whose text is valid, or a 4xx
// JSON error with nothing stored; never a 5xx.
func FuzzMessage(f *testing.F) {
	for _, seed := range []string{
		`{"text": "use Postgres"}`, `{"text": ""}`, `{"text": " "}`, `{"text": "\u0000"}`, `{"text": "\xff"}`,
		`{"text": 1}`, `{"text": null}`, `{}`, `[]`, `null`, `{"text": "a"}{}`, `{"text": "a", "text": "b"}`,
		`{"text": "a", "model": "x"}`, `{"TEXT": "a"}`, `{"text": "<script>alert(1)</script>"}`,
	} {
		f.Add(seed)
	}
	b := setup(f, true)
	job := &drydock.Job{ID: "01900000-0000-7000-8000-00000000f022", JobSpec: drydock.JobSpec{Task: "fuzz"}}
	if err := b.store.CreateJob(f.Context(), job); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		before, err := b.store.ListEvents(t.Context(), job.ID, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("POST", "http://127.0.0.1:8080/v1/jobs/"+job.ID+"/messages", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		b.srv.ServeHTTP(rec, req)
		after, err := b.store.ListEvents(t.Context(), job.ID, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case rec.Code == http.StatusAccepted:
			var ev drydock.Event
			var m drydock.UserMessage
			if json.Unmarshal(rec.Body.Bytes(), &ev) != nil || json.Unmarshal(ev.Data, &m) != nil {
				t.Fatalf("202 with bad body %q", rec.Body)
			}
			if err := drydock.ValidateMessageText(m.Text); err != nil {
				t.Fatalf("stored an invalid message for %q: %v", body, err)
			}
			if len(after) != len(before)+1 || after[len(after)-1].Seq != ev.Seq {
				t.Fatalf("202 stored %d events; want the one answered", len(after)-len(before))
			}
		case rec.Code >= 400 && rec.Code < 500:
			var e struct {
				Error struct{ Code, Message string }
			}
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%d without a JSON error: %q", rec.Code, rec.Body)
			}
			if len(after) != len(before) {
				t.Fatalf("refused body %q stored %d events", body, len(after)-len(before))
			}
		default:
			t.Fatalf("body %q: status %d %s", body, rec.Code, rec.Body)
		}
	})
}
