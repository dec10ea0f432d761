package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// client is a toolbox client for the bundle's server with token tok.
func (b *bundle) client(tok string) *toolbox.Client {
	c := toolbox.New(drydock.Endpoint{Network: "tcp", Address: strings.TrimPrefix(b.ts.URL, "http://")}, tok)
	b.t.Cleanup(c.Close)
	return c
}

func TestClaimReplacesTheToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if err := b.client(testToken).Claim(ctx, toolbox.ClaimRequest{Token: "job-token-1"}); err != nil {
		t.Fatalf("claim: %v", err)
	}
	if _, err := b.client(testToken).Info(ctx); drydock.ErrorCode(err) != drydock.EUNAUTHORIZED {
		t.Errorf("old token after the claim: %v, want unauthorized", err)
	}
	if _, err := b.client("job-token-1").Info(ctx); err != nil {
		t.Errorf("new token after the claim: %v", err)
	}
	// A sandbox is claimed once: not even the new token holder re-claims it.
	err := b.client("job-token-1").Claim(ctx, toolbox.ClaimRequest{Token: "job-token-2"})
	if drydock.ErrorCode(err) != drydock.ECONFLICT {
		t.Errorf("second claim: %v, want conflict", err)
	}
	if _, err := b.client("job-token-2").Info(ctx); drydock.ErrorCode(err) != drydock.EUNAUTHORIZED {
		t.Errorf("token of the refused claim works: %v", err)
	}
}

func TestClaimRefusesAUsedSandbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("file in the workspace", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.ok(http.StatusOK, nil, "PUT", "/v1/files?path=left.txt", "x")
		err := b.client(testToken).Claim(ctx, toolbox.ClaimRequest{Token: "job-token"})
		if drydock.ErrorCode(err) != drydock.ECONFLICT || !strings.Contains(drydock.ErrorMessage(err), "left.txt") {
			t.Errorf("claim of a used workspace: %v, want conflict naming left.txt", err)
		}
		if _, err := b.client(testToken).Info(ctx); err != nil {
			t.Errorf("refused claim changed the token: %v", err)
		}
	})
	t.Run("shell session", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.session("s1")
		err := b.client(testToken).Claim(ctx, toolbox.ClaimRequest{Token: "job-token"})
		if drydock.ErrorCode(err) != drydock.ECONFLICT {
			t.Errorf("claim with a session: %v, want conflict", err)
		}
	})
}

func TestClaimRefusesBadRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		desktop Desktop
		req     toolbox.ClaimRequest
		code    string
	}{
		{"no token", nil, toolbox.ClaimRequest{Token: "  "}, drydock.EINVALID},
		{"same token", nil, toolbox.ClaimRequest{Token: testToken}, drydock.EINVALID},
		{"desktop without a VNC password", &rekeyDesktop{}, toolbox.ClaimRequest{Token: "t2"}, drydock.EINVALID},
		{"desktop that cannot rekey", fixedDesktop{}, toolbox.ClaimRequest{Token: "t2", VNCPassword: "pw"}, drydock.ENOTIMPLEMENTED},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(cfg *Config) { cfg.Desktop = c.desktop })
			if err := b.client(testToken).Claim(ctx, c.req); drydock.ErrorCode(err) != c.code {
				t.Errorf("claim: %v, want %s", err, c.code)
			}
			if _, err := b.client(testToken).Info(ctx); err != nil {
				t.Errorf("refused claim changed the token: %v", err)
			}
		})
	}
}

func TestClaimReplacesTheVNCPassword(t *testing.T) {
	t.Parallel()
	d := &rekeyDesktop{}
	b := setup(t, func(c *Config) { c.Desktop = d })
	if err := b.client(testToken).Claim(context.Background(), toolbox.ClaimRequest{Token: "t2", VNCPassword: "newpass1"}); err != nil {
		t.Fatal(err)
	}
	if got := d.password.Load(); got == nil || *got != "newpass1" {
		t.Errorf("desktop password after the claim: %v", got)
	}
}

func TestClaimIsGrantedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			tok := "job-token-" + string(rune('a'+i))
			if b.srv.Claim(toolbox.ClaimRequest{Token: tok}) == nil {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d concurrent claims succeeded, want 1", wins.Load())
	}
}

// fixedDesktop is a desktop whose VNC password cannot change.
type fixedDesktop struct{}

func (fixedDesktop) Components(context.Context) []toolbox.Component { return nil }
func (fixedDesktop) Screenshot(context.Context) (*toolbox.Screenshot, error) {
	return nil, drydock.Errorf(drydock.EUNAVAILABLE, "no screen")
}
func (fixedDesktop) Do(context.Context, toolbox.DesktopAction) (*toolbox.DesktopResult, error) {
	return nil, drydock.Errorf(drydock.EUNAVAILABLE, "no screen")
}
func (fixedDesktop) ServeVNC(w http.ResponseWriter, r *http.Request) {}

// rekeyDesktop records the password it was given.
type rekeyDesktop struct {
	fixedDesktop
	password atomic.Pointer[string]
}

func (d *rekeyDesktop) SetVNCPassword(pw string) error {
	d.password.Store(&pw)
	return nil
}
