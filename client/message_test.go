package client_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// finished makes a job that ran and ended complete with its workspace
// archived, as a follow-up needs.
func finished(t *testing.T, srv apiServer, spec drydock.JobSpec) *drydock.Job {
	t.Helper()
	j := srv.AddJob(t, spec, time.Now())
	srv.SetStatus(t, j.ID, drydock.StatusRunning, "")
	srv.SetArchive(t, j.ID, map[string]string{"app.py": "print('hi')\n"})
	srv.SetStatus(t, j.ID, drydock.StatusComplete, "")
	return j
}

// A message to a pending or running job is stored for its agent as a
// user_message event; one to a finished job starts its follow-up, with the
// message as the task; a finished job without an archive cannot be
// followed up.
func TestSendMessage(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		live := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())
		for _, status := range []drydock.JobStatus{drydock.StatusPending, drydock.StatusRunning} {
			if status != drydock.StatusPending {
				srv.SetStatus(t, live.ID, status, "")
			}
			res, err := c.SendMessage(t.Context(), live.ID, "use tabs, not spaces ("+string(status)+")")
			if err != nil || res.Event == nil || res.FollowUp != nil {
				t.Fatalf("message to a %s job: %+v, %v; want its event", status, res, err)
			}
			var m drydock.UserMessage
			if res.Event.Type != drydock.EventUserMessage || res.Event.JobID != live.ID || res.Event.Seq == 0 ||
				json.Unmarshal(res.Event.Data, &m) != nil || m.Text != "use tabs, not spaces ("+string(status)+")" {
				t.Errorf("message to a %s job: event %+v", status, res.Event)
			}
		}
		page, err := c.Events(t.Context(), live.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var types []drydock.EventType
		for _, e := range page.Events {
			types = append(types, e.Type)
		}
		if want := []drydock.EventType{drydock.EventStatus, drydock.EventUserMessage, drydock.EventStatus, drydock.EventUserMessage}; !slices.Equal(types, want) {
			t.Errorf("events %v; want %v", types, want)
		}

		if _, err := c.SendMessage(t.Context(), live.ID, " "); drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("blank message: %v, want invalid", err)
		}
		if _, err := c.SendMessage(t.Context(), "nope", "hi"); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("message to nope: %v, want not_found", err)
		}

		unarchived := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())
		srv.SetStatus(t, unarchived.ID, drydock.StatusRunning, "")
		srv.SetStatus(t, unarchived.ID, drydock.StatusError, "sandbox lost")
		if _, err := c.SendMessage(t.Context(), unarchived.ID, "again"); drydock.ErrorCode(err) != drydock.ECONFLICT {
			t.Errorf("message to a finished job without an archive: %v, want conflict", err)
		}

		parent := finished(t, srv, drydock.JobSpec{Task: "first", Model: "m1"})
		res, err := c.SendMessage(t.Context(), parent.ID, "now add tests")
		if err != nil || res.FollowUp == nil || res.Event != nil {
			t.Fatalf("message to a finished job: %+v, %v; want its follow-up", res, err)
		}
		if f := res.FollowUp; f.ParentJobID != parent.ID || f.Task != "now add tests" || f.Model != "m1" || f.Status != drydock.StatusPending {
			t.Errorf("follow-up %+v; want a pending job of parent %s with the message as task and the model inherited", f, parent.ID)
		}

	})
}

// FollowUp creates the job that continues a finished one with the fields
// it overrides, and the parent lists it; a held follow-up has no agent.
func TestFollowUpOverridesAndListsTheChild(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		parent := finished(t, srv, drydock.JobSpec{Task: "first", Model: "m1", Metadata: map[string]string{"a": "b"}, Egress: []string{"pypi.example.com:443"}})
		child, err := c.FollowUp(t.Context(), parent.ID, client.FollowUpRequest{Text: "go on", Metadata: map[string]string{}, MaxSteps: 4})
		if err != nil {
			t.Fatalf("FollowUp: %v", err)
		}
		if child.ParentJobID != parent.ID || child.Task != "go on" || child.Model != "m1" || len(child.Metadata) != 0 || child.MaxSteps != 4 ||
			!slices.Equal(child.Egress, []string{"pypi.example.com:443"}) {
			t.Errorf("follow-up %+v; want parent %s, the model and egress inherited, metadata cleared, 4 steps", child, parent.ID)
		}
		got, err := c.Job(t.Context(), parent.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.FollowUps, []string{child.ID}) {
			t.Errorf("the parent's follow-ups %v; want [%s]", got.FollowUps, child.ID)
		}
		held, err := c.FollowUp(t.Context(), parent.ID, client.FollowUpRequest{Text: "check", Agent: drydock.AgentNone, Egress: []string{}})
		if err != nil || held.Agent != drydock.AgentNone || len(held.Egress) != 0 {
			t.Errorf("held follow-up: %+v %v; want agent none and no egress", held, err)
		}
		if _, err := c.FollowUp(t.Context(), held.ID, client.FollowUpRequest{Text: "x"}); drydock.ErrorCode(err) != drydock.ECONFLICT {
			t.Errorf("follow-up of a pending job: %v, want conflict", err)
		}
	})
}

// Pause and Resume: pausing is idempotent and recorded as an event,
// resuming lifts it, and a finished job cannot be paused.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())
		srv.SetStatus(t, j.ID, drydock.StatusRunning, "")
		p, err := c.Pause(t.Context(), j.ID)
		if err != nil || !p.Paused || p.PausedBy == "" || p.PausedAt == nil || p.Status != drydock.StatusRunning {
			t.Fatalf("Pause: %+v, %v; want a running job paused, by whom and since when", p, err)
		}
		again, err := c.Pause(t.Context(), j.ID)
		if err != nil || !again.Paused || !again.PausedAt.Equal(*p.PausedAt) {
			t.Errorf("second Pause: %+v, %v; want the same pause", again, err)
		}
		r, err := c.Resume(t.Context(), j.ID)
		if err != nil || r.Paused || r.PausedBy != "" {
			t.Errorf("Resume: %+v, %v; want not paused", r, err)
		}
		page, err := c.Events(t.Context(), j.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var types []drydock.EventType
		for _, e := range page.Events {
			types = append(types, e.Type)
		}
		if want := []drydock.EventType{drydock.EventStatus, drydock.EventStatus, drydock.EventPaused, drydock.EventResumed}; !slices.Equal(types, want) {
			t.Errorf("events %v; want %v (one pause, one resume)", types, want)
		}
		srv.SetStatus(t, j.ID, drydock.StatusComplete, "")
		if _, err := c.Pause(t.Context(), j.ID); drydock.ErrorCode(err) != drydock.ECONFLICT {
			t.Errorf("Pause of a finished job: %v, want conflict", err)
		}
		if _, err := c.Resume(t.Context(), "nope"); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("Resume(nope): %v, want not_found", err)
		}
	})
}

// Changes people make are recorded with who made them, in the real
// server's shapes: a message's sender and a pause's author are the
// token's name, an egress change lists what it allowed and removed and
// the token's id.
func TestChangesNameWhoMadeThem(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t", Egress: []string{"old.example.com"}}, time.Now())
		srv.SetStatus(t, j.ID, drydock.StatusRunning, "")
		if _, err := c.SetEgress(t.Context(), j.ID, []string{"pypi.example.com:443"}); err != nil {
			t.Fatal(err)
		}
		res, err := c.SendMessage(t.Context(), j.ID, "hello")
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.Pause(t.Context(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		var m drydock.UserMessage
		json.Unmarshal(res.Event.Data, &m)
		if m.From == "" || p.PausedBy != m.From {
			t.Errorf("message from %q, paused by %q; want the token's name in both", m.From, p.PausedBy)
		}
		page, err := c.Events(t.Context(), j.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var change struct {
			Level, Message string
			Egress         struct {
				List, Added, Removed []string
				By                   string
			}
		}
		for _, e := range page.Events {
			if e.Type == drydock.EventLog {
				json.Unmarshal(e.Data, &change)
			}
		}
		if change.Message != "egress allowlist changed; allowed pypi.example.com:443; removed old.example.com" ||
			!slices.Equal(change.Egress.List, []string{"pypi.example.com:443"}) || !slices.Equal(change.Egress.Added, []string{"pypi.example.com:443"}) ||
			!slices.Equal(change.Egress.Removed, []string{"old.example.com"}) || change.Egress.By == "" {
			t.Errorf("egress change recorded as %+v", change)
		}
	})
}

// A job whose agent asks a question shows it until the job ends.
func TestWaitingForEndsWithTheJob(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t", Interactive: true}, time.Now())
		srv.SetStatus(t, j.ID, drydock.StatusRunning, "")
		srv.SetWaitingFor(t, j.ID, "Which port?")
		if got, err := c.Job(t.Context(), j.ID); err != nil || got.WaitingFor != "Which port?" {
			t.Errorf("waiting job: %+v, %v; want its question", got, err)
		}
		srv.SetStatus(t, j.ID, drydock.StatusComplete, "")
		if got, err := c.Job(t.Context(), j.ID); err != nil || got.WaitingFor != "" {
			t.Errorf("finished job still waits for %q (%v)", got.WaitingFor, err)
		}
	})
}
