package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// FuzzCreateJob: whatever the body, the answer is 201 with a valid stored
// job or a 4xx JSON error; never a 5xx, never a stored half-job.
func FuzzCreateJob(f *testing.F) {
	for _, seed := range []string{
		`{"task": "x"}`, `{"prompt": "y", "timeout": 90}`, `{"task": "x", "timeout": "1h"}`,
		`{"task": "x", "metadata": {"a": "b"}}`, `{"task": "x", "profile": "desktop", "max_steps": 3}`,
		`{"task": ""}`, `{"task": 1}`, `[]`, `null`, `{"task": "x"}{}`, `{"task": "\u0000"}`, `{"task": "\xff"}`,
		`{"task": "x", "repo": {"url": "https://git.example.com/p.git", "ref": "main"}}`,
		`{"task": "x", "repo": {"url": "http://127.0.0.2:8080/p.git", "ref": "0123456789abcdef0123456789abcdef01234567"}}`,
		`{"task": "x", "repo": {"url": "https://u:p@git.example.com/p.git"}}`, `{"task": "x", "repo": {"url": "https://h/p", "URL": "x"}}`,
		`{"task": "x", "timeout": -1}`, `{"task": "x", "timeout": 1e308}`, `{"metadata": {"": ""}, "task": "x"}`,
	} {
		f.Add(seed)
	}
	b := setup(f, true)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "http://127.0.0.1:8080/v1/jobs", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		b.srv.ServeHTTP(rec, req)
		switch {
		case rec.Code == http.StatusCreated:
			var j drydock.Job
			if err := json.Unmarshal(rec.Body.Bytes(), &j); err != nil {
				t.Fatalf("201 with bad body %q: %v", rec.Body, err)
			}
			got, err := b.store.GetJob(t.Context(), j.ID)
			if err != nil {
				t.Fatalf("201 but job not stored: %v", err)
			}
			if err := got.JobSpec.Validate(); err != nil {
				t.Fatalf("stored an invalid spec for %q: %v", body, err)
			}
		case rec.Code >= 400 && rec.Code < 500:
			var e struct {
				Error struct{ Code, Message string }
			}
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%d without a JSON error: %q", rec.Code, rec.Body)
			}
		default:
			t.Fatalf("body %q: status %d %s", body, rec.Code, rec.Body)
		}
	})
}
