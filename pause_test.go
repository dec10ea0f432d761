package drydock_test

import (
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

func TestPauseSummaryNotice(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		p    drydock.PauseSummary
		want string
	}{
		{"a person's pause", drydock.PauseSummary{From: from, To: from.Add(42 * time.Second), By: []string{"alice"}, Reasons: []drydock.PauseReason{drydock.PauseUser}},
			"The job was paused from 09:00:00 UTC to 09:00:42 UTC (42s) by alice."},
		{"the desktop, two people", drydock.PauseSummary{From: from, To: from.Add(time.Minute), By: []string{"alice", "bob"}, Desktop: true},
			"The job was paused from 09:00:00 UTC to 09:01:00 UTC (1m0s) by alice and bob. A person used the desktop in that time, so windows, files or the screen may have changed: check the state before you continue."},
		{"pause-max, nobody named", drydock.PauseSummary{From: from, To: from.Add(time.Hour), Reasons: []drydock.PauseReason{drydock.PauseUser, drydock.PauseMax}},
			"The job was paused from 09:00:00 UTC to 10:00:00 UTC (1h0m0s) by a person. It resumed by itself after the server's longest pause (--pause-max)."},
		{"three names", drydock.PauseSummary{From: from, To: from, By: []string{"a", "b", "c"}},
			"The job was paused from 09:00:00 UTC to 09:00:00 UTC (0s) by a, b, and c."},
	} {
		if got := tc.p.Notice(); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// Taking over a lease that expired unreleased ends the old holder's pause
// as of its expiry and starts the new one's now: two events.
func TestTakeOverAnExpiredLease(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	j := &drydock.Job{Status: drydock.StatusRunning}
	if _, err := drydock.ApplyPause(j, drydock.PauseChange{Op: drydock.OpTakeControl, Holder: "a", By: "alice", TTL: time.Second}, now); err != nil {
		t.Fatal(err)
	}
	recs, err := drydock.ApplyPause(j, drydock.PauseChange{Op: drydock.OpTakeControl, Holder: "b", By: "bob", TTL: time.Second}, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Type != drydock.EventResumed || !recs[0].Data.Expired || !recs[0].Data.To.Equal(now.Add(time.Second)) ||
		recs[1].Type != drydock.EventPaused || recs[1].Data.By != "bob" {
		t.Fatalf("records %+v", recs)
	}
	if j.PausedTotal != time.Second || !j.PausedAt.Equal(now.Add(time.Minute)) || j.Pauses != 2 {
		t.Fatalf("job: total %s, paused at %v, pauses %d", j.PausedTotal, j.PausedAt, j.Pauses)
	}
}
