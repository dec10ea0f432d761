package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

func (b *bundle) pause(t *testing.T, op, id, token string) (int, *drydock.Job, []byte) {
	t.Helper()
	resp, data := b.do(t, "POST", "/v1/jobs/"+id+"/"+op, token, "")
	var j drydock.Job
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, &j); err != nil {
			t.Fatalf("%s answer: %v: %s", op, err, data)
		}
	}
	return resp.StatusCode, &j, data
}

func TestPauseAndResumeAreIdempotentAndShown(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	job := b.schedule(t, b.alice, `{"task": "x"}`)
	if _, err := b.store.ClaimJob(t.Context(), "w1", time.Minute); err != nil {
		t.Fatal(err)
	}
	// A job never paused shows nothing of it: old clients see no change.
	_, data := b.do(t, "GET", "/v1/jobs/"+job.ID, b.alice, "")
	for _, k := range []string{`"paused`, `"control_holder"`} {
		if strings.Contains(string(data), k) {
			t.Fatalf("a job never paused shows %s: %s", k, data)
		}
	}

	var first *drydock.Job
	for i := range 2 {
		code, j, data := b.pause(t, "pause", job.ID, b.alice)
		if code != http.StatusOK || !j.Paused || j.PausedAt == nil || j.PausedBy != "tok_alice" || j.Status != drydock.StatusRunning {
			t.Fatalf("pause #%d: %d %s", i+1, code, data)
		}
		if first == nil {
			first = j
		} else if !j.PausedAt.Equal(*first.PausedAt) {
			t.Fatalf("a second pause moved paused_at from %v to %v", first.PausedAt, j.PausedAt)
		}
	}
	_, data = b.do(t, "GET", "/status/"+job.ID, b.alice, "")
	var got drydock.Job
	json.Unmarshal(data, &got)
	if !got.Paused || got.Status != drydock.StatusRunning {
		t.Fatalf("status of a paused job: %s", data)
	}

	for i := range 2 {
		code, j, data := b.pause(t, "resume", job.ID, b.alice)
		if code != http.StatusOK || j.Paused || j.PausedAt != nil {
			t.Fatalf("resume #%d: %d %s", i+1, code, data)
		}
	}
	var types []drydock.EventType
	es, _ := b.store.ListEvents(t.Context(), job.ID, 0, 100)
	for _, e := range es {
		types = append(types, e.Type)
	}
	if countType(types, drydock.EventPaused) != 1 || countType(types, drydock.EventResumed) != 1 {
		t.Fatalf("events %v; want one paused and one resumed", types)
	}
}

func countType(ts []drydock.EventType, want drydock.EventType) int {
	n := 0
	for _, t := range ts {
		if t == want {
			n++
		}
	}
	return n
}

func TestPauseOfAFinishedJobIsAConflict(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	job := b.schedule(t, b.alice, `{"task": "x"}`)
	if _, data := b.do(t, "POST", "/v1/jobs/"+job.ID+"/cancel", b.alice, ""); !strings.Contains(string(data), "cancelled") {
		t.Fatalf("cancel: %s", data)
	}
	before, _ := b.store.ListEvents(t.Context(), job.ID, 0, 100)
	for _, op := range []string{"pause", "resume"} {
		code, _, data := b.pause(t, op, job.ID, b.alice)
		if code != http.StatusConflict || errorCode(t, data) != drydock.ECONFLICT || !strings.Contains(string(data), "nothing to "+op) {
			t.Fatalf("%s of a cancelled job: %d %s; want 409 saying there is nothing to %s", op, code, data, op)
		}
	}
	if after, _ := b.store.ListEvents(t.Context(), job.ID, 0, 100); len(after) != len(before) {
		t.Fatalf("a refused pause stored %d events", len(after)-len(before))
	}
}

func TestPauseOfUnknownOrForeignJobIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	job := b.schedule(t, b.alice, `{"task": "x"}`)
	for _, tc := range []struct{ id, token string }{
		{job.ID, b.bob}, // someone else's
		{"0190a6c5-0000-7000-8000-000000000000", b.alice}, // nobody's
		{"not-a-uuid", b.alice},
	} {
		for _, op := range []string{"pause", "resume"} {
			code, _, data := b.pause(t, op, tc.id, tc.token)
			if code != http.StatusNotFound || errorCode(t, data) != drydock.ENOTFOUND {
				t.Fatalf("%s %s: %d %s; want 404", op, tc.id, code, data)
			}
		}
	}
	if j, _ := b.store.GetJob(t.Context(), job.ID); j.Paused {
		t.Fatal("bob paused alice's job")
	}
	// An admin may pause anyone's job, as it may cancel it.
	if code, j, data := b.pause(t, "pause", job.ID, b.admin); code != http.StatusOK || !j.Paused || j.PausedBy != "tok_admin" {
		t.Fatalf("admin pause: %d %s", code, data)
	}
	_, data := b.do(t, "GET", "/v1/jobs/"+job.ID, b.alice, "")
	var got drydock.Job
	json.Unmarshal(data, &got)
	if !got.Paused || got.PausedBy != "tok_admin" {
		t.Fatalf("alice's view of her paused job: %s", data)
	}
}
