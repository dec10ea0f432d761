package kubernetes

import rbacv1 "k8s.io/api/rbac/v1"

// PolicyRules are the permissions this runtime needs in its namespace, no
// more: the tests record every call the runtime makes and compare, and
// deploy/kubernetes's Role is checked against this list. Nothing is asked
// at cluster scope.
func PolicyRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "delete", "get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "delete", "get", "list", "patch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"create", "delete", "patch"}},
	}
}
