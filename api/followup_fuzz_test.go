package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/google/uuid"
)

// FuzzFollowUp: whatever the body of a message to a finished job, the
// answer is 201 with a stored follow-up that names its parent, holds a
// valid spec and has its copy of the archive, or a 4xx JSON error that
// stored no job; never a 5xx.
func FuzzFollowUp(f *testing.F) {
	for _, seed := range []string{
		`{"text": "x"}`, `{"text": "x", "model": "m", "profile": "desktop", "max_steps": 3, "timeout": "1h"}`,
		`{"text": "x", "egress": []}`, `{"text": "x", "egress": null}`, `{"text": "x", "egress": ["example.com:443"]}`,
		`{"text": "x", "metadata": {}}`, `{"text": "x", "metadata": null}`, `{"text": "x", "context_budget": 1}`,
		`{"text": "x", "secrets": {}}`, `{"text": "x", "secrets": {"A": "b"}}`, `{"text": "x", "repo": {"url": "https://h/p"}}`,
		`{"text": ""}`, `{"text": 1}`, `{"text": null}`, `[]`, `null`, `{"text": "x"}{}`, `{"text": "\u0000"}`, `{"text": "\xff"}`,
		`{"text": "x", "task": "y"}`, `{"Text": "x", "text": "y"}`, `{"text": "x", "profile": null}`, `{"text": "x", "model": null}`,
	} {
		f.Add(seed)
	}
	b := setup(f, true)
	parent := &drydock.Job{ID: uuid.Must(uuid.NewV7()).String(), OwnerID: "local", JobSpec: drydock.JobSpec{Task: "x", Profile: drydock.ProfileHeadless}}
	if err := b.store.CreateJob(f.Context(), parent); err != nil {
		f.Fatal(err)
	}
	claimed, err := b.store.ClaimJob(f.Context(), "w", 3600e9)
	if err != nil || claimed == nil {
		f.Fatal(err)
	}
	key := parent.ID + ".tar.gz"
	n, err := b.artifacts.Put(f.Context(), key, strings.NewReader("not checked here"))
	if err != nil {
		f.Fatal(err)
	}
	if err := b.store.SetArtifact(f.Context(), parent.ID, key, n); err != nil {
		f.Fatal(err)
	}
	if err := b.store.FinishJob(f.Context(), parent.ID, "w", drydock.JobResult{Status: drydock.StatusComplete}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		before := b.countJobs(t)
		req := httptest.NewRequest("POST", "http://127.0.0.1:8080/v1/jobs/"+parent.ID+"/messages", strings.NewReader(body))
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
			if got.ParentJobID != parent.ID || got.InputKey == "" {
				t.Fatalf("follow-up stored with parent %q, input %q", got.ParentJobID, got.InputKey)
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
			if after := b.countJobs(t); after != before {
				t.Fatalf("body %q refused (%d) but a job was stored", body, rec.Code)
			}
		default:
			t.Fatalf("body %q: status %d %s", body, rec.Code, rec.Body)
		}
	})
}
