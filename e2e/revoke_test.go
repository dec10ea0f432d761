package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Revoking a token with the CLI, in another process, ends what the token
// had open on a running server: `drydock logs --follow` of that
// token stops within seconds with an error naming the token, instead of
// streaming on.
func TestRevokedTokenStopsTheCLIsFollow(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	create := func(name string) (id, secret string) {
		out, err := exec.Command(binary, "token", "create", "--data-dir", s.dataDir, "--name", name, "--admin", "--json").Output()
		if err != nil {
			t.Fatalf("token create: %v", err)
		}
		var tok struct{ ID, Token string }
		if err := json.Unmarshal(out, &tok); err != nil || tok.ID == "" || tok.Token == "" {
			t.Fatalf("token create printed %q: %v", out, err)
		}
		return tok.ID, tok.Token
	}
	// A second token keeps the server out of development mode once the
	// first is revoked.
	id, secret := create("follower")
	create("keeper")
	s.start()

	code, body := s.do("POST", "/schedule", secret, `{"task": "run until cancelled [fake:hang]"}`)
	if code != 201 {
		t.Fatalf("schedule: %d %s", code, body)
	}
	var job struct {
		JobID string `json:"job_id"`
	}
	json.Unmarshal([]byte(body), &job)

	follow := exec.Command(binary, "logs", "--follow", job.JobID)
	follow.Env = append(os.Environ(), "DRYDOCK_URL="+s.url(), "DRYDOCK_TOKEN="+secret)
	var out, stderr syncBuffer
	follow.Stdout, follow.Stderr = &out, &stderr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = follow.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- follow.Wait() }()
	// Wait until the follower has printed the job's first event.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "running") && !strings.Contains(out.String(), "pending") {
		if time.Now().After(deadline) {
			t.Fatalf("logs --follow printed nothing in 30s:\n%s\n%s", out.String(), stderr.String())
		}
		select {
		case err := <-done:
			t.Fatalf("logs --follow ended before the revocation: %v\n%s\n%s", err, out.String(), stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}

	if b, err := exec.Command(binary, "token", "revoke", "--data-dir", s.dataDir, id).CombinedOutput(); err != nil {
		t.Fatalf("token revoke: %v\n%s", err, b)
	}
	select {
	case err := <-done:
		t.Logf("logs --follow after the revocation: %v: %s", err, strings.TrimSpace(stderr.String()))
		if err == nil {
			t.Errorf("logs --follow exited 0 after its token was revoked:\n%s", out.String())
		}
		if !strings.Contains(stderr.String(), "revoked") {
			t.Errorf("logs --follow does not say the token was revoked:\n%s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("logs --follow still streaming 30s after its token was revoked:\n%s", out.String())
	}
}
