package drydock_test

import (
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

func TestSandboxSecrets(t *testing.T) {
	t.Parallel()
	if got := drydock.RandomHex(8); len(got) != 16 || strings.Trim(got, "0123456789abcdef") != "" {
		t.Errorf("RandomHex(8) = %q", got)
	}
	a, b := drydock.NewSandboxToken(), drydock.NewSandboxToken()
	if len(a) != 43 || a == b {
		t.Errorf("tokens %q, %q: want 43 characters (256 bits), distinct", a, b)
	}
	seen := map[string]bool{}
	for range 100 {
		p := drydock.NewVNCPassword()
		if len(p) != 8 || strings.ContainsAny(p, "lIO01") {
			t.Fatalf("VNC password %q: want 8 characters without look-alikes", p)
		}
		seen[p] = true
	}
	if len(seen) < 99 {
		t.Errorf("only %d distinct VNC passwords in 100", len(seen))
	}
}

func TestSandboxSpecCheckAndLabels(t *testing.T) {
	t.Parallel()
	s := drydock.SandboxSpec{JobID: "j", Labels: map[string]string{"team": "web", drydock.LabelServer: "spoofed"}}
	if err := s.Check(); err != nil || s.Profile != drydock.ProfileHeadless {
		t.Fatalf("Check: %v, profile %q", err, s.Profile)
	}
	l := s.RuntimeLabels("node-1")
	if l["team"] != "web" || l[drydock.LabelManaged] != "true" || l[drydock.LabelJob] != "j" || l[drydock.LabelServer] != "node-1" {
		t.Errorf("labels %v", l)
	}
	if s.Labels[drydock.LabelServer] != "spoofed" {
		t.Error("RuntimeLabels changed the spec's own map")
	}
	for _, bad := range []drydock.SandboxSpec{{}, {JobID: "j", Profile: "gpu"}, {JobID: "j", Egress: []string{" "}}} {
		if err := bad.Check(); drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("Check(%+v) = %v", bad, err)
		}
	}
	r := drydock.Resources{CPUs: 2}.Or(drydock.Resources{MemoryBytes: 1 << 30}, drydock.Resources{CPUs: 9, MemoryBytes: 9, PidsLimit: 64})
	if r != (drydock.Resources{CPUs: 2, MemoryBytes: 1 << 30, PidsLimit: 64}) {
		t.Errorf("Or = %+v", r)
	}
}
