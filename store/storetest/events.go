package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

func (s *suite) cancelTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"Pending":  s.testCancelPending,
		"Running":  s.testCancelRunning,
		"Terminal": s.testCancelTerminal,
		"Missing":  s.testCancelMissing,
	}
}

func (s *suite) testCancelPending(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "u"))
	before := time.Now()
	got, err := st.CancelJob(t.Context(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != drydock.StatusCancelled || got.FinishedAt == nil {
		t.Fatalf("CancelJob(pending) = %+v; want cancelled with FinishedAt", got)
	}
	within(t, "FinishedAt", *got.FinishedAt, before, time.Now())
	if stored := mustGet(t, st, j.ID); stored.Status != drydock.StatusCancelled || !stored.FinishedAt.Equal(*got.FinishedAt) {
		t.Fatalf("stored job = %+v", stored)
	}
	es := mustEvents(t, st, j.ID)
	if len(es) != 2 || es[1].Seq != 2 || es[1].Type != drydock.EventStatus {
		t.Fatalf("events = %v; want a second, status event", es)
	}
	sameJSON(t, "cancel event", es[1].Data, `{"status":"cancelled"}`)
	claimNone(t, st, "w")

	// Cancelling again changes nothing.
	again, err := st.CancelJob(t.Context(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != drydock.StatusCancelled || !again.FinishedAt.Equal(*got.FinishedAt) {
		t.Fatalf("second CancelJob = %+v", again)
	}
	if n := len(mustEvents(t, st, j.ID)); n != 2 {
		t.Fatalf("second CancelJob appended events: %d; want 2", n)
	}
}

func (s *suite) testCancelRunning(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "w", time.Hour)
	for i := range 2 { // the second request is a no-op
		got, err := st.CancelJob(t.Context(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != drydock.StatusRunning || !got.CancelRequested || got.FinishedAt != nil || got.LeaseOwner != "w" {
			t.Fatalf("CancelJob(running) #%d = %+v; want running with CancelRequested, lease kept", i+1, got)
		}
	}
	if n := len(mustEvents(t, st, j.ID)); n != 1 {
		t.Fatalf("a cancel request appended events: %d; want 1", n)
	}
	// The worker finishes it; the job ends as the worker says.
	if err := st.FinishJob(t.Context(), j.ID, "w", drydock.JobResult{Status: drydock.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, st, j.ID); got.Status != drydock.StatusCancelled || got.FinishedAt == nil {
		t.Fatalf("finished cancelled job = %+v", got)
	}
}

func (s *suite) testCancelTerminal(t *testing.T) {
	for _, status := range []drydock.JobStatus{drydock.StatusComplete, drydock.StatusError, drydock.StatusCancelled} {
		t.Run(string(status), func(t *testing.T) {
			t.Parallel()
			st := s.newStore(t)
			mustCreate(t, st, newJob(t, "u"))
			j := mustClaim(t, st, "w", time.Hour)
			if err := st.FinishJob(t.Context(), j.ID, "w", drydock.JobResult{Status: status, Summary: "done"}); err != nil {
				t.Fatal(err)
			}
			want := mustGet(t, st, j.ID)
			got, err := st.CancelJob(t.Context(), j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != status || got.CancelRequested || !got.FinishedAt.Equal(*want.FinishedAt) || got.Summary != "done" {
				t.Fatalf("CancelJob(%s) = %+v; want it unchanged: %+v", status, got, want)
			}
			if n := len(mustEvents(t, st, j.ID)); n != 2 {
				t.Fatalf("CancelJob of a finished job appended events: %d; want 2", n)
			}
		})
	}
}

func (s *suite) testCancelMissing(t *testing.T) {
	st := s.newStore(t)
	_, err := st.CancelJob(t.Context(), newID(t))
	wantCode(t, "CancelJob of a missing job", err, drydock.ENOTFOUND)
}

func (s *suite) eventTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"AppendAndList":    s.testAppendAndList,
		"AppendErrors":     s.testAppendErrors,
		"SizeLimit":        s.testEventSizeLimit,
		"ListLimits":       s.testEventListLimits,
		"ConcurrentAppend": s.testConcurrentAppend,
	}
}

func (s *suite) testAppendAndList(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "u"))
	other := mustCreate(t, st, newJob(t, "u"))

	explicit := ts(time.Now().Add(-time.Hour))
	inputs := []*drydock.Event{
		drydock.NewEvent(j.ID, drydock.EventLog, map[string]string{"level": "info", "message": "sandbox up"}),
		{JobID: j.ID, Type: drydock.EventToolCall, Time: explicit, Data: json.RawMessage(`{"id":"t1","name":"bash","input":{"cmd":"ls"}}`)},
		drydock.NewEvent(j.ID, drydock.EventUsage, drydock.Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.01}),
	}
	before := time.Now()
	for i, e := range inputs {
		if err := st.AppendEvent(t.Context(), e); err != nil {
			t.Fatal(err)
		}
		if e.Seq != int64(i+2) {
			t.Fatalf("event %d got seq %d; want %d", i, e.Seq, i+2)
		}
	}
	after := time.Now()
	within(t, "Time set by AppendEvent", inputs[0].Time, before, after)
	if !inputs[1].Time.Equal(explicit) {
		t.Fatalf("AppendEvent replaced the caller's time %s with %s", explicit, inputs[1].Time)
	}
	// Another job's log is numbered on its own.
	oe := drydock.NewEvent(other.ID, drydock.EventLog, map[string]string{"message": "x"})
	if err := st.AppendEvent(t.Context(), oe); err != nil {
		t.Fatal(err)
	}
	if oe.Seq != 2 {
		t.Fatalf("other job's event got seq %d; want 2", oe.Seq)
	}

	all := mustEvents(t, st, j.ID)
	if len(all) != 4 {
		t.Fatalf("%d events; want 4", len(all))
	}
	for i, e := range all[1:] {
		in := inputs[i]
		if e.JobID != j.ID || e.Seq != in.Seq || e.Type != in.Type || !e.Time.Equal(in.Time) {
			t.Errorf("listed event %d = %+v; appended %+v", i+2, e, in)
		}
		sameJSON(t, fmt.Sprintf("event %d", e.Seq), e.Data, string(in.Data))
	}

	tests := []struct {
		after    int64
		limit    int
		wantSeqs []int64
	}{
		{0, 0, []int64{1, 2, 3, 4}},
		{1, 2, []int64{2, 3}},
		{3, 10, []int64{4}},
		{4, 10, nil},
		{99, 10, nil},
	}
	for _, tt := range tests {
		es, err := st.ListEvents(t.Context(), j.ID, tt.after, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, e := range es {
			seqs = append(seqs, e.Seq)
		}
		if fmt.Sprint(seqs) != fmt.Sprint(tt.wantSeqs) {
			t.Errorf("ListEvents(after %d, limit %d) seqs = %v; want %v", tt.after, tt.limit, seqs, tt.wantSeqs)
		}
	}
}

func (s *suite) testAppendErrors(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "u"))
	missing := newID(t)
	tests := []struct {
		name string
		e    *drydock.Event
		code string
	}{
		{"missing job", drydock.NewEvent(missing, drydock.EventLog, "x"), drydock.ENOTFOUND},
		{"no job id", drydock.NewEvent("", drydock.EventLog, "x"), drydock.EINVALID},
		{"no type", drydock.NewEvent(j.ID, "", "x"), drydock.EINVALID},
		{"invalid JSON", &drydock.Event{JobID: j.ID, Type: drydock.EventLog, Data: json.RawMessage(`{"a":`)}, drydock.EINVALID},
	}
	for _, tt := range tests {
		wantCode(t, tt.name, st.AppendEvent(t.Context(), tt.e), tt.code)
	}
	_, err := st.ListEvents(t.Context(), missing, 0, 10)
	wantCode(t, "ListEvents of a missing job", err, drydock.ENOTFOUND)

	// Failed appends take no seq.
	e := drydock.NewEvent(j.ID, drydock.EventLog, "ok")
	if err := st.AppendEvent(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	if e.Seq != 2 {
		t.Fatalf("seq after failed appends = %d; want 2", e.Seq)
	}
}

func (s *suite) testEventSizeLimit(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "u"))
	// A JSON string of exactly the limit, and one byte more.
	atLimit := json.RawMessage(`"` + strings.Repeat("a", drydock.MaxEventDataBytes-2) + `"`)
	over := json.RawMessage(`"` + strings.Repeat("a", drydock.MaxEventDataBytes-1) + `"`)

	err := st.AppendEvent(t.Context(), &drydock.Event{JobID: j.ID, Type: drydock.EventObservation, Data: over})
	wantCode(t, "AppendEvent over the limit", err, drydock.ETOOLARGE)

	e := &drydock.Event{JobID: j.ID, Type: drydock.EventObservation, Data: atLimit}
	if err := st.AppendEvent(t.Context(), e); err != nil {
		t.Fatalf("AppendEvent at the limit: %v", err)
	}
	es, err := st.ListEvents(t.Context(), j.ID, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Seq != 2 {
		t.Fatalf("events after seq 1 = %v; want the big one as seq 2", es)
	}
	var got string
	if err := json.Unmarshal(es[0].Data, &got); err != nil || len(got) != drydock.MaxEventDataBytes-2 {
		t.Fatalf("big event came back as %d bytes (err %v)", len(got), err)
	}
}

func (s *suite) testEventListLimits(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "u"))
	appendMany(t, st, j.ID, 1100, 16)
	tests := []struct {
		limit, want int
	}{
		{0, 100},  // default
		{-1, 100}, // default
		{250, 250},
		{1000, 1000},
		{5000, 1000}, // capped
	}
	for _, tt := range tests {
		es, err := st.ListEvents(t.Context(), j.ID, 0, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != tt.want {
			t.Errorf("ListEvents(limit %d) = %d events; want %d", tt.limit, len(es), tt.want)
		}
	}
}

// appendMany appends n log events to job from workers goroutines; each event's
// data names its writer and its index in that writer's sequence.
func appendMany(t *testing.T, st drydock.Store, job string, n, workers int) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				e := drydock.NewEvent(job, drydock.EventLog, map[string]int{"writer": w, "i": i})
				if err := st.AppendEvent(t.Context(), e); err != nil {
					t.Errorf("AppendEvent: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

func (s *suite) testConcurrentAppend(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "u"))
	const n, workers = 400, 8
	appendMany(t, st, j.ID, n, workers)

	var all []*drydock.Event
	var after int64
	for {
		page, err := st.ListEvents(t.Context(), j.ID, after, 64)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
	if len(all) != n+1 {
		t.Fatalf("%d events; want %d", len(all), n+1)
	}
	lastOf := map[int]int{} // writer -> last index seen
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: seqs have a gap or a duplicate", i, e.Seq)
		}
		if i == 0 {
			continue
		}
		var d struct{ Writer, I int }
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		// Each writer's events keep the order it appended them in.
		if last, ok := lastOf[d.Writer]; ok && d.I <= last {
			t.Fatalf("writer %d: event %d came after event %d", d.Writer, d.I, last)
		}
		lastOf[d.Writer] = d.I
	}
}
