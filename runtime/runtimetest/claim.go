package runtimetest

import (
	"context"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// Claimer is a runtime that can hand a warm sandbox (started for no job yet)
// to a job: the capability the warm pool needs. Run checks its contract
// when the runtime has it.
type Claimer interface {
	drydock.Runtime
	Claim(ctx context.Context, id, jobID string) (*drydock.Sandbox, error)
}

// testClaim is the warm pool's contract: a claimed sandbox answers to the
// job's new token only, a restarted orchestrator sees the claim, a sandbox
// is claimed once, and a sandbox someone has used is refused.
func (s *suite) testClaim(t *testing.T) {
	if _, ok := s.newRuntime(t).(Claimer); !ok {
		t.Skip("the runtime cannot claim warm sandboxes (no warm pool on it)")
	}
	t.Run("GivesTheJobItsOwnSecrets", s.testClaimSecrets)
	t.Run("SeenAfterRestart", s.testClaimAfterRestart)
	t.Run("Once", s.testClaimOnce)
	t.Run("RefusesAUsedSandbox", s.testClaimUsed)
}

// warm starts a sandbox as the pool does, for no job yet, and waits until
// its toolboxd answers.
func (s *suite) warm(t *testing.T, rt drydock.Runtime) *drydock.Sandbox {
	t.Helper()
	spec := s.spec(t)
	spec.JobID = "pool:" + drydock.RandomHex(4)
	if s.opts.ClaimSpec != nil {
		spec = s.opts.ClaimSpec(spec)
	}
	sb := s.create(t, rt, spec)
	ctx, cancel := context.WithTimeout(t.Context(), s.opts.ReadyTimeout)
	defer cancel()
	if err := WaitHealthy(ctx, sb); err != nil {
		t.Fatalf("toolboxd of the warm sandbox %s does not answer: %v", sb.ID, err)
	}
	return sb
}

func answers(sb *drydock.Sandbox, token string) error {
	c := toolbox.New(sb.Endpoint, token)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Info(ctx)
	return err
}

func (s *suite) testClaimSecrets(t *testing.T) {
	t.Parallel()
	rt := s.newRuntime(t).(Claimer)
	warm := s.warm(t, rt)
	job := "job-" + drydock.RandomHex(4)
	sb, err := rt.Claim(t.Context(), warm.ID, job)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if sb.ID != warm.ID || sb.Token == "" || sb.Token == warm.Token {
		t.Fatalf("Claim gave sandbox %s with the pool's token or none (same token: %t)", sb.ID, sb.Token == warm.Token)
	}
	if warm.VNCPassword != "" && (sb.VNCPassword == "" || sb.VNCPassword == warm.VNCPassword) {
		t.Error("the job kept the pool's VNC password")
	}
	if sb.Labels[drydock.LabelJob] != job {
		t.Errorf("the claimed sandbox's job label is %q, want %q", sb.Labels[drydock.LabelJob], job)
	}
	if err := answers(sb, warm.Token); drydock.ErrorCode(err) != drydock.EUNAUTHORIZED {
		t.Errorf("the pool's token after the claim: %v, want %s", err, drydock.EUNAUTHORIZED)
	}
	if err := answers(sb, sb.Token); err != nil {
		t.Errorf("the job's token: %v", err)
	}
}

func (s *suite) testClaimAfterRestart(t *testing.T) {
	t.Parallel()
	rt := s.newRuntime(t).(Claimer)
	warm := s.warm(t, rt)
	job := "job-" + drydock.RandomHex(4)
	sb, err := rt.Claim(t.Context(), warm.ID, job)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	again := s.newRuntime(t)
	got, err := again.Get(t.Context(), sb.ID)
	if err != nil {
		t.Fatalf("Get after a restart: %v", err)
	}
	if got.Token != sb.Token || got.VNCPassword != sb.VNCPassword || got.Labels[drydock.LabelJob] != job {
		t.Errorf("after a restart: job %q, the job's secrets: %t", got.Labels[drydock.LabelJob], got.Token == sb.Token && got.VNCPassword == sb.VNCPassword)
	}
	list, err := again.List(t.Context(), map[string]string{drydock.LabelJob: job})
	if err != nil || len(list) != 1 || list[0].ID != sb.ID {
		t.Errorf("List by the claiming job after a restart: %v, %v", list, err)
	}
}

func (s *suite) testClaimOnce(t *testing.T) {
	t.Parallel()
	rt := s.newRuntime(t).(Claimer)
	warm := s.warm(t, rt)
	sb, err := rt.Claim(t.Context(), warm.ID, "job-"+drydock.RandomHex(4))
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	// A second orchestrator claiming the same sandbox, as two replicas
	// racing for one warm sandbox would.
	other := s.newRuntime(t).(Claimer)
	if _, err := other.Claim(t.Context(), warm.ID, "job-other"); drydock.ErrorCode(err) != drydock.ECONFLICT {
		t.Errorf("second claim: %v, want %s", err, drydock.ECONFLICT)
	}
	if err := answers(sb, sb.Token); err != nil {
		t.Errorf("the refused second claim broke the first job's token: %v", err)
	}
}

func (s *suite) testClaimUsed(t *testing.T) {
	t.Parallel()
	rt := s.newRuntime(t).(Claimer)
	warm := s.warm(t, rt)
	c := toolbox.New(warm.Endpoint, warm.Token)
	defer c.Close()
	if err := c.WriteFile(t.Context(), "left-by-someone", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Claim(t.Context(), warm.ID, "job-"+drydock.RandomHex(4)); drydock.ErrorCode(err) != drydock.ECONFLICT {
		t.Errorf("claim of a used workspace: %v, want %s", err, drydock.ECONFLICT)
	}
	got, err := rt.Get(t.Context(), warm.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Token != warm.Token || got.Labels[drydock.LabelJob] != warm.Labels[drydock.LabelJob] {
		t.Error("a refused claim changed the sandbox's secrets or job")
	}
}
