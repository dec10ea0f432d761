package kubernetes

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/egress"
)

var _ egress.Updater = (*Runtime)(nil)

// A running sandbox's NetworkPolicy follows its job's list: widened,
// narrowed and emptied, with the ingress rule untouched.
func TestUpdateEgressRewritesThePolicy(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testNS)
	rt := newTestRuntime(t, c, nil)
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-1", Egress: []string{"203.0.113.7:443"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Destroy(context.Background(), sb.ID) })
	policy := func() ([]string, int) {
		t.Helper()
		np, err := c.cs.NetworkingV1().NetworkPolicies(testNS).Get(t.Context(), sb.ID, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var cidrs []string
		for _, r := range np.Spec.Egress {
			for _, to := range r.To {
				if to.IPBlock != nil {
					cidrs = append(cidrs, to.IPBlock.CIDR)
				}
			}
		}
		return cidrs, len(np.Spec.Ingress)
	}
	steps := []struct {
		list []string
		want []string
	}{
		{[]string{"198.51.100.0/24", "203.0.113.7:443"}, []string{"198.51.100.0/24", "203.0.113.7/32"}},
		{[]string{"pypi.org:443"}, []string{"0.0.0.0/0", "::/0"}}, // a name: every public address (plus DNS)
		{nil, nil}, // nothing may leave
	}
	for _, s := range steps {
		if err := rt.UpdateEgress(t.Context(), sb.ID, s.list); err != nil {
			t.Fatalf("UpdateEgress(%q): %v", s.list, err)
		}
		got, ingress := policy()
		if len(got) != len(s.want) {
			t.Fatalf("after %q the policy allows %q, want %q", s.list, got, s.want)
		}
		for i := range got {
			if got[i] != s.want[i] {
				t.Errorf("after %q the policy allows %q, want %q", s.list, got, s.want)
			}
		}
		if ingress != 1 {
			t.Errorf("after %q the policy has %d ingress rules, want the orchestrator's one", s.list, ingress)
		}
	}

	if err := rt.UpdateEgress(t.Context(), sb.ID, []string{"not a host"}); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Errorf("bad destination: %v", err)
	}
	if err := rt.UpdateEgress(t.Context(), "drydock-0000000000000000", nil); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Errorf("unknown sandbox: %v", err)
	}
	if err := rt.UpdateEgress(t.Context(), "../etc", nil); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Errorf("bad id: %v", err)
	}
}
