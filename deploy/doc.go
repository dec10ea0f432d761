// Package deploy holds Drydock's deployment files, not code: kubernetes/
// (kustomize: the orchestrator Deployment, Service, RBAC, NetworkPolicies,
// RuntimeClass examples), nomad/ (a Nomad job), and the orchestrator's
// Dockerfile. Its tests decode every manifest with the Kubernetes scheme,
// build the kustomizations, hold the RBAC Role to what runtime/kubernetes
// calls, check the pods against the restricted Pod Security Standard, and
// parse the Nomad job. See README.md for what was and was not run on a real
// cluster.
package deploy
