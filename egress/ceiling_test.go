package egress

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// The operator's ceiling binds every connection, even to a destination
// the job's stored list names (a list stored before the ceiling was set,
// or by a replica that was told otherwise).
func TestCeilingRefusesWhatTheJobListAllows(t *testing.T) {
	t.Parallel()
	inside := httptest.NewServer(hello("inside"))
	defer inside.Close()
	outside := httptest.NewServer(hello("outside"))
	defer outside.Close()
	p, err := drydock.NewEgressPolicy(nil, []string{hostPort(t, inside.URL)})
	if err != nil {
		t.Fatal(err)
	}
	f := setup(t, Config{Ceiling: p.Allows}, hostPort(t, inside.URL), hostPort(t, outside.URL))

	if code, body := get(t, f.client(nil), inside.URL+"/"); code != http.StatusOK || !strings.HasPrefix(body, "inside") {
		t.Errorf("within the ceiling: %d %q", code, body)
	}
	code, body := get(t, f.client(nil), outside.URL+"/")
	if code != http.StatusForbidden || !strings.Contains(body, "--egress-allow") || strings.Contains(body, "--allow ") {
		t.Errorf("beyond the ceiling: %d %q; want 403 naming --egress-allow, with no advice to change the job's list", code, body)
	}
	if d := <-f.denied; d.Dest() != hostPort(t, outside.URL) {
		t.Errorf("denial reported as %+v", d)
	}
	status, _ := rawConnect(t, f.url.Host, hostPort(t, outside.URL))
	if !strings.Contains(status, " 403 ") {
		t.Errorf("CONNECT beyond the ceiling: %q", status)
	}
}
