package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// Messages to a job's agent: appended while the job lives, bounded, and
// refused once it has ended.
func (s *suite) messageTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"InteractiveKept":             s.testInteractiveKept,
		"AgentNoneKept":               s.testAgentNoneKept,
		"AppendMessageWhileLive":      s.testAppendMessageLive,
		"AppendMessageRefusedAtEnd":   s.testAppendMessageTerminal,
		"AppendMessageMissingJob":     s.testAppendMessageMissing,
		"AppendMessageBadData":        s.testAppendMessageBadData,
		"WaitingForSetAndCleared":     s.testWaitingFor,
		"WaitingForNeedsTheLease":     s.testWaitingForLease,
		"WaitingForClearedAtTheEnd":   s.testWaitingForFinish,
		"OldStyleJobIsNotInteractive": s.testNotInteractive,
		"MessagesPerJobAreBounded":    s.testMessagesBounded,
	}
}

func userMessage(t *testing.T, id, text string) *drydock.Event {
	t.Helper()
	data, err := json.Marshal(drydock.UserMessage{Text: text, From: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	return &drydock.Event{JobID: id, Type: drydock.EventUserMessage, Data: data}
}

// testInteractiveKept: interactive comes back from every read, including
// the claim that hands the job to the runner.
func (s *suite) testInteractiveKept(t *testing.T) {
	st := s.newStore(t)
	j := newJob(t, "tok-1")
	j.Interactive = true
	mustCreate(t, st, j)
	if !mustGet(t, st, j.ID).Interactive {
		t.Fatal("GetJob lost interactive")
	}
	jobs, _, err := st.ListJobs(t.Context(), drydock.JobFilter{OwnerID: "tok-1"})
	if err != nil || len(jobs) != 1 || !jobs[0].Interactive {
		t.Fatalf("ListJobs: %v %v; want the job, interactive", jobs, err)
	}
	if !mustClaim(t, st, "w", time.Minute).Interactive {
		t.Fatal("ClaimJob lost interactive")
	}
}

// testAgentNoneKept: a job without an agent (AgentNone) reads back as one
// everywhere, above all in the claim that tells the runner to hold its
// sandbox rather than start an agent.
func (s *suite) testAgentNoneKept(t *testing.T) {
	st := s.newStore(t)
	plain := mustCreate(t, st, newJob(t, "tok-1"))
	j := newJob(t, "tok-1")
	j.Agent = drydock.AgentNone
	mustCreate(t, st, j)
	if got := mustGet(t, st, j.ID).Agent; got != drydock.AgentNone {
		t.Fatalf("GetJob: agent %q, want %q", got, drydock.AgentNone)
	}
	if got := mustGet(t, st, plain.ID).Agent; got != "" {
		t.Fatalf("a job with the server's agent reads back agent %q, want \"\"", got)
	}
	jobs, _, err := st.ListJobs(t.Context(), drydock.JobFilter{OwnerID: "tok-1"})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("ListJobs: %v %v; want both jobs", jobs, err)
	}
	for _, got := range jobs {
		if got.ID == j.ID && got.Agent != drydock.AgentNone {
			t.Fatalf("ListJobs lost agent: %q", got.Agent)
		}
	}
	for range 2 {
		c := mustClaim(t, st, "w", time.Minute)
		if c.ID == j.ID && c.Agent != drydock.AgentNone {
			t.Fatalf("ClaimJob lost agent: %q", c.Agent)
		}
	}
}

func (s *suite) testNotInteractive(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "o"))
	got := mustGet(t, st, j.ID)
	if got.Interactive || got.WaitingFor != "" {
		t.Fatalf("a plain job reads back interactive=%v waiting_for=%q", got.Interactive, got.WaitingFor)
	}
}

// testAppendMessageLive: a pending and a running job take messages, each
// numbered after the job's events like any other event.
func (s *suite) testAppendMessageLive(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "o"))
	first := userMessage(t, j.ID, "use Postgres")
	if err := st.AppendMessage(t.Context(), first); err != nil {
		t.Fatalf("AppendMessage to a pending job: %v", err)
	}
	if first.Seq != 2 || first.Time.IsZero() {
		t.Fatalf("AppendMessage set seq %d, time %v; want seq 2 and a time", first.Seq, first.Time)
	}
	mustClaim(t, st, "w", time.Minute)
	if err := st.AppendEvent(t.Context(), &drydock.Event{JobID: j.ID, Type: drydock.EventLog, Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	second := userMessage(t, j.ID, "and add tests")
	if err := st.AppendMessage(t.Context(), second); err != nil {
		t.Fatalf("AppendMessage to a running job: %v", err)
	}
	if second.Seq != 4 {
		t.Fatalf("second message seq %d; want 4", second.Seq)
	}
	es := mustEvents(t, st, j.ID)
	if len(es) != 4 || es[1].Type != drydock.EventUserMessage || es[3].Type != drydock.EventUserMessage {
		t.Fatalf("events %v; want status, message, log, message", es)
	}
	sameJSON(t, "second message", es[3].Data, `{"text":"and add tests","from":"ci"}`)
}

// testAppendMessageTerminal: a finished job refuses a message with
// ECONFLICT and stores nothing.
func (s *suite) testAppendMessageTerminal(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "o"))
	mustClaim(t, st, "w", time.Minute)
	if err := st.FinishJob(t.Context(), j.ID, "w", drydock.JobResult{Status: drydock.StatusComplete}); err != nil {
		t.Fatal(err)
	}
	before := len(mustEvents(t, st, j.ID))
	wantCode(t, "AppendMessage to a complete job", st.AppendMessage(t.Context(), userMessage(t, j.ID, "hi")), drydock.ECONFLICT)
	if after := len(mustEvents(t, st, j.ID)); after != before {
		t.Fatalf("a refused message left %d events; want %d", after, before)
	}
	// The next event still takes the next seq: the refusal used none.
	e := &drydock.Event{JobID: j.ID, Type: drydock.EventLog, Data: json.RawMessage(`{}`)}
	if err := st.AppendEvent(t.Context(), e); err != nil || e.Seq != int64(before+1) {
		t.Fatalf("AppendEvent after the refusal: seq %d, %v; want %d", e.Seq, err, before+1)
	}

	c := mustCreate(t, st, newJob(t, "o"))
	if _, err := st.CancelJob(t.Context(), c.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "AppendMessage to a cancelled job", st.AppendMessage(t.Context(), userMessage(t, c.ID, "hi")), drydock.ECONFLICT)
}

func (s *suite) testAppendMessageMissing(t *testing.T) {
	st := s.newStore(t)
	wantCode(t, "AppendMessage to a missing job", st.AppendMessage(t.Context(), userMessage(t, newID(t), "hi")), drydock.ENOTFOUND)
}

func (s *suite) testAppendMessageBadData(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "o"))
	wantCode(t, "AppendMessage of invalid JSON", st.AppendMessage(t.Context(),
		&drydock.Event{JobID: j.ID, Type: drydock.EventUserMessage, Data: json.RawMessage(`{`)}), drydock.EINVALID)
	big := make([]byte, drydock.MaxEventDataBytes+1)
	for i := range big {
		big[i] = ' '
	}
	wantCode(t, "AppendMessage over the limit", st.AppendMessage(t.Context(),
		&drydock.Event{JobID: j.ID, Type: drydock.EventUserMessage, Data: big}), drydock.ETOOLARGE)
	if n := len(mustEvents(t, st, j.ID)); n != 1 {
		t.Fatalf("refused messages left %d events; want 1", n)
	}
}

// testWaitingFor: the lease owner records the question its agent waits
// on, every read shows it, and "" clears it.
func (s *suite) testWaitingFor(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "o"))
	mustClaim(t, st, "w", time.Minute)
	q := "Postgres or SQLite? — «either» is fine"
	if err := st.SetWaitingFor(t.Context(), j.ID, "w", q); err != nil {
		t.Fatalf("SetWaitingFor: %v", err)
	}
	if got := mustGet(t, st, j.ID).WaitingFor; got != q {
		t.Fatalf("waiting_for %q; want %q", got, q)
	}
	jobs, _, err := st.ListJobs(t.Context(), drydock.JobFilter{})
	if err != nil || len(jobs) != 1 || jobs[0].WaitingFor != q {
		t.Fatalf("ListJobs: %v %v; want the question", jobs, err)
	}
	if err := st.SetWaitingFor(t.Context(), j.ID, "w", ""); err != nil {
		t.Fatalf("SetWaitingFor(\"\"): %v", err)
	}
	if got := mustGet(t, st, j.ID).WaitingFor; got != "" {
		t.Fatalf("waiting_for %q after clearing", got)
	}
}

func (s *suite) testWaitingForLease(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "o"))
	wantCode(t, "SetWaitingFor of a pending job", st.SetWaitingFor(t.Context(), j.ID, "w", "q?"), drydock.ELEASELOST)
	mustClaim(t, st, "w", time.Minute)
	wantCode(t, "SetWaitingFor by another worker", st.SetWaitingFor(t.Context(), j.ID, "other", "q?"), drydock.ELEASELOST)
	wantCode(t, "SetWaitingFor of a missing job", st.SetWaitingFor(t.Context(), newID(t), "w", "q?"), drydock.ENOTFOUND)
	if got := mustGet(t, st, j.ID).WaitingFor; got != "" {
		t.Fatalf("refused SetWaitingFor stored %q", got)
	}
}

// testWaitingForFinish: a job that ends while its agent waits shows no
// question any more.
func (s *suite) testWaitingForFinish(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "o"))
	mustClaim(t, st, "w", time.Minute)
	if err := st.SetWaitingFor(t.Context(), j.ID, "w", "q?"); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishJob(t.Context(), j.ID, "w", drydock.JobResult{Status: drydock.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, st, j.ID).WaitingFor; got != "" {
		t.Fatalf("a finished job still waits for %q", got)
	}
}

// testMessagesBounded: a job takes MaxMessagesPerJob messages and refuses
// the next with ETOOLARGE, storing nothing; other events still append.
func (s *suite) testMessagesBounded(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "o"))
	for i := range drydock.MaxMessagesPerJob {
		if err := st.AppendMessage(t.Context(), userMessage(t, j.ID, "m")); err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
	before, err := st.ListEvents(t.Context(), j.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	err = st.AppendMessage(t.Context(), userMessage(t, j.ID, "one more"))
	if drydock.ErrorCode(err) != drydock.ETOOLARGE {
		t.Fatalf("message %d: %v; want %s", drydock.MaxMessagesPerJob+1, err, drydock.ETOOLARGE)
	}
	after, err := st.ListEvents(t.Context(), j.ID, 0, 10000)
	if err != nil || len(after) != len(before) {
		t.Fatalf("the refused message changed the log: %d events, then %d (%v)", len(before), len(after), err)
	}
	if err := st.AppendEvent(t.Context(), drydock.NewEvent(j.ID, drydock.EventLog, map[string]string{"message": "still"})); err != nil {
		t.Fatalf("another event after the bound: %v", err)
	}
}
