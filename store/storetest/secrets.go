package storetest

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

func (s *suite) secretTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"SealedRoundTrip":      s.testSecretsRoundTrip,
		"PlainRefused":         s.testSecretsPlainRefused,
		"ErasedWhenFinished":   s.testSecretsErasedWhenFinished,
		"ErasedWhenCancelled":  s.testSecretsErasedWhenCancelled,
		"KeptWhileCancelling":  s.testSecretsKeptWhileCancelling,
		"KeptForFollowUps":     s.testSecretsKeptForFollowUps,
		"NotInListedJobs":      s.testSecretsNotListed,
		"NoSecretsStaysEmpty":  s.testNoSecrets,
		"LargestSealedSecrets": s.testLargestSealedSecrets,
		"KeyBinding":           s.testSecretsKeyBinding,
		"KeyBindingRace":       s.testSecretsKeyBindingRace,
	}
}

// sealed stands for a value secretbox sealed: any bytes, NUL and invalid
// UTF-8 included.
var sealed = []byte{1, 0, 0xff, 0xfe, 'x', 0, 7, 0x80}

func newSecretJob(t *testing.T) *drydock.Job {
	j := newJob(t, "owner")
	j.SecretNames = []string{"API_TOKEN", "GITHUB_TOKEN"}
	j.SealedSecrets = bytes.Clone(sealed)
	return j
}

func sameSecrets(t *testing.T, what string, j *drydock.Job, names []string, sealedWant []byte) {
	t.Helper()
	if !slices.Equal(j.SecretNames, names) {
		t.Errorf("%s: SecretNames = %v; want %v", what, j.SecretNames, names)
	}
	if !bytes.Equal(j.SealedSecrets, sealedWant) {
		t.Errorf("%s: SealedSecrets = %x; want %x", what, j.SealedSecrets, sealedWant)
	}
	if j.Secrets != nil {
		t.Errorf("%s: a stored job came back with plain secrets", what)
	}
}

func (s *suite) testSecretsRoundTrip(t *testing.T) {
	st := s.newStore(t)
	j := newSecretJob(t)
	// The plain values ride along on a job being created; a store keeps
	// only the sealed form.
	j.Secrets = drydock.SecretValues{"API_TOKEN": "value-one-1", "GITHUB_TOKEN": "value-two-2"}
	mustCreate(t, st, j)
	names := []string{"API_TOKEN", "GITHUB_TOKEN"}
	sameSecrets(t, "GetJob", mustGet(t, st, j.ID), names, sealed)
	c := mustClaim(t, st, "w", time.Hour)
	sameSecrets(t, "ClaimJob", c, names, sealed)
	r, err := st.RenewLease(t.Context(), j.ID, "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sameSecrets(t, "RenewLease", r, names, sealed)
}

func (s *suite) testSecretsPlainRefused(t *testing.T) {
	st := s.newStore(t)
	j := newJob(t, "owner")
	j.Secrets = drydock.SecretValues{"API_TOKEN": "value-one-1"}
	j.SecretNames = []string{"API_TOKEN"}
	if err := st.CreateJob(t.Context(), j); err == nil {
		t.Fatal("CreateJob stored a job whose secrets were not sealed")
	}
	if _, err := st.GetJob(t.Context(), j.ID); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Fatalf("a refused job is stored anyway: %v", err)
	}
	k := newJob(t, "owner")
	k.SealedSecrets = sealed
	if err := st.CreateJob(t.Context(), k); err == nil {
		t.Fatal("CreateJob stored sealed secrets without their names")
	}
}

func (s *suite) testSecretsErasedWhenFinished(t *testing.T) {
	for _, status := range []drydock.JobStatus{drydock.StatusComplete, drydock.StatusError, drydock.StatusCancelled} {
		st := s.newStore(t)
		j := mustCreate(t, st, newSecretJob(t))
		mustClaim(t, st, "w", time.Hour)
		if err := st.FinishJob(t.Context(), j.ID, "w", drydock.JobResult{Status: status}); err != nil {
			t.Fatal(err)
		}
		// The names stay: they say what the job had.
		sameSecrets(t, "finished "+string(status), mustGet(t, st, j.ID), j.SecretNames, nil)
	}
}

// testSecretsKeptForFollowUps: a job that ends with KeepSecrets keeps its
// sealed secrets (a follow-up may inherit them) until
// EraseSecretsFinishedBefore passes its end; running and pending jobs'
// secrets, and jobs that ended later, are left alone.
func (s *suite) testSecretsKeptForFollowUps(t *testing.T) {
	st := s.newStore(t)
	kept := mustCreate(t, st, newSecretJob(t))
	mustClaim(t, st, "w", time.Hour)
	if err := st.FinishJob(t.Context(), kept.ID, "w", drydock.JobResult{Status: drydock.StatusComplete, KeepSecrets: true}); err != nil {
		t.Fatal(err)
	}
	running := mustCreate(t, st, newSecretJob(t))
	mustClaim(t, st, "w", time.Hour)
	pending := mustCreate(t, st, newSecretJob(t))
	sameSecrets(t, "finished, kept", mustGet(t, st, kept.ID), kept.SecretNames, sealed)
	ended := *mustGet(t, st, kept.ID).FinishedAt

	if n, err := st.EraseSecretsFinishedBefore(t.Context(), ended.Add(-time.Minute)); err != nil || n != 0 {
		t.Fatalf("erase before the job ended: %d, %v; want none", n, err)
	}
	sameSecrets(t, "not yet past the window", mustGet(t, st, kept.ID), kept.SecretNames, sealed)
	if n, err := st.EraseSecretsFinishedBefore(t.Context(), time.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("erase past the job's end: %d, %v; want 1", n, err)
	}
	sameSecrets(t, "past the window", mustGet(t, st, kept.ID), kept.SecretNames, nil)
	sameSecrets(t, "running", mustGet(t, st, running.ID), running.SecretNames, sealed)
	sameSecrets(t, "pending", mustGet(t, st, pending.ID), pending.SecretNames, sealed)
	if n, err := st.EraseSecretsFinishedBefore(t.Context(), time.Now().Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("a second erase: %d, %v; want none", n, err)
	}
}

func (s *suite) testSecretsErasedWhenCancelled(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newSecretJob(t))
	got, err := st.CancelJob(t.Context(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != drydock.StatusCancelled {
		t.Fatalf("status %s; want cancelled", got.Status)
	}
	sameSecrets(t, "CancelJob's answer", got, j.SecretNames, nil)
	sameSecrets(t, "cancelled while pending", mustGet(t, st, j.ID), j.SecretNames, nil)
}

func (s *suite) testSecretsKeptWhileCancelling(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newSecretJob(t))
	mustClaim(t, st, "w", time.Hour)
	if _, err := st.CancelJob(t.Context(), j.ID); err != nil {
		t.Fatal(err)
	}
	// A running job is only flagged; its worker still needs the secrets
	// until it finishes the job.
	sameSecrets(t, "cancel requested", mustGet(t, st, j.ID), j.SecretNames, sealed)
}

func (s *suite) testSecretsNotListed(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newSecretJob(t))
	jobs, _, err := st.ListJobs(t.Context(), drydock.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != j.ID {
		t.Fatalf("ListJobs = %d jobs", len(jobs))
	}
	// Only the worker that runs a job needs the sealed value.
	sameSecrets(t, "ListJobs", jobs[0], j.SecretNames, nil)
}

func (s *suite) testNoSecrets(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "owner"))
	got := mustGet(t, st, j.ID)
	if len(got.SecretNames) != 0 || len(got.SealedSecrets) != 0 {
		t.Fatalf("a job without secrets has names %v, sealed %x", got.SecretNames, got.SealedSecrets)
	}
}

func (s *suite) testLargestSealedSecrets(t *testing.T) {
	st := s.newStore(t)
	j := newJob(t, "owner")
	for i := range drydock.MaxSecrets {
		j.SecretNames = append(j.SecretNames, "S"+string(rune('A'+i%26))+string(rune('A'+i/26)))
	}
	slices.Sort(j.SecretNames)
	// 32 values of 4 KiB, JSON-encoded and sealed: a little over 128 KiB.
	j.SealedSecrets = bytes.Repeat([]byte{0, 0xff, 'a', '"'}, (drydock.MaxSecrets*(drydock.MaxSecretValueLen+64))/4)
	mustCreate(t, st, j)
	sameSecrets(t, "largest", mustGet(t, st, j.ID), j.SecretNames, j.SealedSecrets)
}

func (s *suite) testSecretsKeyBinding(t *testing.T) {
	st := s.newStore(t)
	first, second := []byte{0, 1, 2, 0xff}, []byte("another key's check")
	bind := func(what string, check []byte, replace bool, want []byte) {
		t.Helper()
		got, err := st.BindSecretsKey(t.Context(), check, replace)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %x, %v; want %x", what, got, err, want)
		}
	}
	bind("first bind", first, false, first)
	bind("same key again", first, false, first)
	bind("another key", second, false, first)
	bind("another key, replacing", second, true, second)
	bind("the first key after the replacement", first, false, second)
	if s.reopen == nil {
		return
	}
	st = s.reopen(t, st)
	bind("after reopening", first, false, second)
}

// Replicas starting together with different keys: one key is bound, and
// every one of them is told which.
func (s *suite) testSecretsKeyBindingRace(t *testing.T) {
	st := s.newStore(t)
	got := make([][]byte, 16)
	errs := make([]error, len(got))
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i], errs[i] = st.BindSecretsKey(t.Context(), []byte{byte(i), 'k'}, false) })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || !bytes.Equal(got[i], got[0]) || len(got[0]) != 2 {
			t.Errorf("bind %d: %x, %v; bind 0 got %x", i, got[i], errs[i], got[0])
		}
	}
}
