package hostclient_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/toolbox/hostclient"
	"github.com/drydockhq/drydock/toolbox/server"
)

const bootToken = "boot-token"

// claimBundle is a real toolboxd API on a loopback port, the directory a
// runtime keeps for the sandbox, and the marker ClaimOnce creates there.
type claimBundle struct {
	ep     drydock.Endpoint
	marker string
	// dropClaims is how many answers to POST /v1/claim are lost after
	// toolboxd handled the claim, as when a connection breaks.
	dropClaims atomic.Int32
}

func setupClaim(t *testing.T) *claimBundle {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{Workspace: ws, Token: bootToken, StateDir: t.TempDir()}, slog.New(slog.DiscardHandler))
	b := &claimBundle{marker: filepath.Join(t.TempDir(), "claimed")}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/claim" && b.dropClaims.Add(-1) >= 0 {
			srv.ServeHTTP(httptest.NewRecorder(), r)
			panic(http.ErrAbortHandler) // the client sees the connection break
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		srv.Close()
	})
	b.ep = drydock.Endpoint{Network: "tcp", Address: strings.TrimPrefix(ts.URL, "http://")}
	return b
}

// answersTo reports whether the sandbox's toolboxd accepts token.
func (b *claimBundle) answersTo(t *testing.T, token string) bool {
	t.Helper()
	c := toolbox.New(b.ep, token)
	defer c.Close()
	_, err := c.Info(t.Context())
	return err == nil
}

func TestClaimOnceHandsTheSandboxToOneJob(t *testing.T) {
	t.Parallel()
	b := setupClaim(t)
	if err := hostclient.ClaimOnce(t.Context(), b.marker, "job-1", b.ep, bootToken, toolbox.ClaimRequest{Token: "job-token"}); err != nil {
		t.Fatalf("claim: %v", err)
	}
	if got, err := os.ReadFile(b.marker); err != nil || string(got) != "job-1\n" {
		t.Errorf("marker holds %q (%v), want the job id", got, err)
	}
	if b.answersTo(t, bootToken) || !b.answersTo(t, "job-token") {
		t.Error("after the claim toolboxd must answer to the job's token alone")
	}

	err := hostclient.ClaimOnce(t.Context(), b.marker, "job-2", b.ep, "job-token", toolbox.ClaimRequest{Token: "other-token"})
	if drydock.ErrorCode(err) != drydock.ECONFLICT {
		t.Fatalf("second claim: %v, want a conflict", err)
	}
	if !b.answersTo(t, "job-token") {
		t.Error("a refused second claim changed the token")
	}
}

func TestClaimOnceNeedsAJob(t *testing.T) {
	t.Parallel()
	b := setupClaim(t)
	err := hostclient.ClaimOnce(t.Context(), b.marker, "", b.ep, bootToken, toolbox.ClaimRequest{Token: "job-token"})
	if drydock.ErrorCode(err) != drydock.EINVALID {
		t.Fatalf("claim without a job: %v, want invalid", err)
	}
	if _, err := os.Stat(b.marker); !os.IsNotExist(err) {
		t.Errorf("a refused claim left its marker: %v", err)
	}
	if !b.answersTo(t, bootToken) {
		t.Error("a refused claim changed the token")
	}
}

// A claim whose answer is lost may have taken effect, and the client's
// retry with the old token is then refused: ClaimOnce asks with the new
// token and reports the claim as done.
func TestClaimOnceSurvivesALostAnswer(t *testing.T) {
	t.Parallel()
	b := setupClaim(t)
	b.dropClaims.Store(1)
	if err := hostclient.ClaimOnce(t.Context(), b.marker, "job-1", b.ep, bootToken, toolbox.ClaimRequest{Token: "job-token"}); err != nil {
		t.Fatalf("claim with a lost answer: %v", err)
	}
	if !b.answersTo(t, "job-token") {
		t.Error("toolboxd does not answer to the job's token")
	}
}

// A claim that toolboxd refuses is reported as refused, even though the
// new token is tried afterwards.
func TestClaimOnceReportsARefusal(t *testing.T) {
	t.Parallel()
	b := setupClaim(t)
	err := hostclient.ClaimOnce(t.Context(), b.marker, "job-1", b.ep, "wrong-token", toolbox.ClaimRequest{Token: "job-token"})
	if drydock.ErrorCode(err) != drydock.EUNAUTHORIZED {
		t.Fatalf("claim with the wrong token: %v, want unauthorized", err)
	}
	if !b.answersTo(t, bootToken) {
		t.Error("a refused claim changed the token")
	}
}
