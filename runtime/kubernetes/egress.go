package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drydockhq/drydock"
)

// UpdateEgress replaces the egress rules of a sandbox's NetworkPolicy with
// those of egress, for a job whose list changed while it runs or that took
// over a sandbox made for another list (egress.Updater). The CNI applies
// the change to new connections; whether it cuts established ones depends
// on the CNI. A NetworkPolicy matches addresses only: a host name opens its
// port to every public address (see egressRules).
func (r *Runtime) UpdateEgress(ctx context.Context, id string, egress []string) error {
	if !idPattern.MatchString(id) {
		return drydock.Errorf(drydock.ENOTFOUND, "sandbox %q not found", id)
	}
	var rules []networkingv1.NetworkPolicyEgressRule
	if len(egress) > 0 {
		var err error
		if rules, err = r.egressRules(egress); err != nil {
			return err
		}
	}
	// A merge patch replaces the list whole; null removes it, which with
	// Egress in the policy types lets nothing out. Patch is the verb the
	// runtime already holds for adopting the policy.
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"egress": rules}})
	if err != nil {
		return err
	}
	if _, err := r.cs.NetworkingV1().NetworkPolicies(r.namespace).Patch(ctx, id, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return drydock.Errorf(drydock.ENOTFOUND, "sandbox %s has no network policy (is it gone?)", id)
		}
		return apiError(fmt.Sprintf("update egress of sandbox %s", id), err)
	}
	r.log.Info("sandbox egress updated", "sandbox", id, "rules", len(egress))
	return nil
}
