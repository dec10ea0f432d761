package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"

	"github.com/drydockhq/drydock"
)

// Option configures Run.
type Option func(*config)

type config struct {
	reopen func(t *testing.T, s drydock.Store) drydock.Store
}

// WithReopen gives the suite a way to close a store and open the same
// database again, which enables the durability tests. reopen must accept a
// store that is already closed.
func WithReopen(reopen func(t *testing.T, s drydock.Store) drydock.Store) Option {
	return func(c *config) { c.reopen = reopen }
}

// Run runs the conformance suite. newStore returns an empty store that lives
// until the end of t (it registers its own cleanup); every subtest gets its
// own and they run in parallel.
//
// Backends keep times to the microsecond, so the suite sets times rounded to
// microseconds and compares them exactly.
func Run(t *testing.T, newStore func(t *testing.T) drydock.Store, opts ...Option) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	s := &suite{newStore: newStore, config: c}
	groups := []struct {
		name  string
		tests map[string]func(t *testing.T)
	}{
		{"Jobs", s.jobTests()},
		{"Queue", s.queueTests()},
		{"Cancel", s.cancelTests()},
		{"Events", s.eventTests()},
		{"Tokens", s.tokenTests()},
		{"Secrets", s.secretTests()},
		{"Idempotency", s.idempotencyTests()},
		{"Durability", s.durabilityTests()},
		{"Repo", s.repoTests()},
		{"Messages", s.messageTests()},
		{"FollowUp", s.followUpTests()},
		{"Pause", s.pauseTests()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for name, test := range g.tests {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					test(t)
				})
			}
		})
	}
}

type suite struct {
	newStore func(t *testing.T) drydock.Store
	config
}

// newID returns a UUIDv7 job id; successive calls sort in call order.
func newID(t *testing.T) string {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

// ts returns a time the store keeps exactly.
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func newJob(t *testing.T, owner string) *drydock.Job {
	return &drydock.Job{
		ID:        newID(t),
		OwnerID:   owner,
		CreatedAt: ts(time.Now()),
		JobSpec:   drydock.JobSpec{Task: "write hello.txt"},
	}
}

func mustCreate(t *testing.T, s drydock.Store, j *drydock.Job) *drydock.Job {
	t.Helper()
	if err := s.CreateJob(t.Context(), j); err != nil {
		t.Fatalf("CreateJob(%s): %v", j.ID, err)
	}
	return j
}

func mustGet(t *testing.T, s drydock.Store, id string) *drydock.Job {
	t.Helper()
	j, err := s.GetJob(t.Context(), id)
	if err != nil {
		t.Fatalf("GetJob(%s): %v", id, err)
	}
	return j
}

func mustClaim(t *testing.T, s drydock.Store, owner string, ttl time.Duration) *drydock.Job {
	t.Helper()
	j, err := s.ClaimJob(t.Context(), owner, ttl)
	if err != nil {
		t.Fatalf("ClaimJob(%s): %v", owner, err)
	}
	if j == nil {
		t.Fatalf("ClaimJob(%s) = nil; want a job", owner)
	}
	return j
}

func claimNone(t *testing.T, s drydock.Store, owner string) {
	t.Helper()
	j, err := s.ClaimJob(t.Context(), owner, time.Hour)
	if err != nil {
		t.Fatalf("ClaimJob(%s): %v", owner, err)
	}
	if j != nil {
		t.Fatalf("ClaimJob(%s) = job %s (%s, lease %s until %s); want none", owner, j.ID, j.Status, j.LeaseOwner, j.LeaseExpiresAt)
	}
}

func mustEvents(t *testing.T, s drydock.Store, id string) []*drydock.Event {
	t.Helper()
	es, err := s.ListEvents(t.Context(), id, 0, 1000)
	if err != nil {
		t.Fatalf("ListEvents(%s): %v", id, err)
	}
	return es
}

// wantCode fails unless err carries code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := drydock.ErrorCode(err); got != code {
		t.Fatalf("%s: error %v (code %q); want code %q", what, err, got, code)
	}
}

// jobOpts compares jobs field by field, with times by instant and empty
// maps equal to nil ones.
var jobOpts = cmp.Options{cmpopts.EquateEmpty()}

// sameJSON fails unless got and want encode the same value: backends may
// store JSON normalised (Postgres jsonb reorders keys).
func sameJSON(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: data %q is not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		panic(fmt.Sprintf("bad want %q: %v", want, err))
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Fatalf("%s: data mismatch (-want +got):\n%s", what, diff)
	}
}

// within fails unless at lies in [lo, hi], allowing for the rounding to
// microseconds.
func within(t *testing.T, what string, at, lo, hi time.Time) {
	t.Helper()
	if at.Before(lo.Add(-time.Microsecond)) || at.After(hi.Add(time.Microsecond)) {
		t.Fatalf("%s = %s; want between %s and %s", what, at, lo, hi)
	}
}

// eventually polls cond every 10ms until it holds or 5s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
