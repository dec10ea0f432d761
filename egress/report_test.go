package egress

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// eventLog records appended events; the Reporter needs nothing else of a
// store.
type eventLog struct {
	drydock.Store
	mu     sync.Mutex
	events []*drydock.Event
}

func (l *eventLog) AppendEvent(ctx context.Context, e *drydock.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	return nil
}

func (l *eventLog) messages(t *testing.T) []string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		var d struct{ Level, Message string }
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		if e.Type != drydock.EventLog || d.Level != "warn" {
			t.Errorf("event %s %+v", e.Type, d)
		}
		out = append(out, d.Message)
	}
	return out
}

func TestReporterRecordsEachDestinationOncePerWindow(t *testing.T) {
	t.Parallel()
	log := &eventLog{}
	r := &Reporter{Store: log, Every: 200 * time.Millisecond, Burst: 3}
	d := Denial{Host: "pypi.example.com", Port: 443, Status: 403, Reason: "not in the job's egress allowlist"}
	for range 5 {
		r.Deny("job-1", d)
	}
	r.Deny("job-2", d) // another job has its own record
	got := log.messages(t)
	if len(got) != 2 || !strings.Contains(got[0], "egress refused: pypi.example.com:443 (not in the job's egress allowlist)") {
		t.Fatalf("after 5 refusals of one destination: %q", got)
	}
	time.Sleep(250 * time.Millisecond)
	r.Deny("job-1", d)
	if got = log.messages(t); len(got) != 3 || !strings.Contains(got[2], "4 more refusals of it not recorded") {
		t.Fatalf("after the window: %q", got)
	}
}

func TestReporterBoundsRecordsPerJob(t *testing.T) {
	t.Parallel()
	log := &eventLog{}
	r := &Reporter{Store: log, Every: time.Hour, Burst: 3}
	for i := range 50 {
		r.Deny("job-1", Denial{Host: "h" + string(rune('a'+i%26)) + ".example", Port: 80 + i, Status: 403})
	}
	if got := log.messages(t); len(got) != 3 {
		t.Fatalf("50 destinations gave %d records, want the burst of 3", len(got))
	}
}
