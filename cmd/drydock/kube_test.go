package main

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/google/go-cmp/cmp"
)

// fakeAPI answers the two lists the runtime makes at start, or refuses
// them as the API server does without RBAC.
func fakeAPI(t *testing.T, status int) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != http.StatusOK {
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":%d,"message":"pods is forbidden: User \"system:serviceaccount:drydock:drydock\" cannot list resource \"pods\""}`, status)
			return
		}
		kind := "PodList"
		if strings.HasSuffix(r.URL.Path, "/secrets") {
			kind = "SecretList"
		}
		fmt.Fprintf(w, `{"kind":%q,"apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`, kind)
	}))
	t.Cleanup(srv.Close)
	return srv, &paths
}

func writeKubeconfig(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config")
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: test
  user: {token: test-bearer-token}
contexts:
- name: test
  context: {cluster: test, user: test}
current-context: test
`, srv.URL, ca)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKubernetesRuntimeFromKubeconfig(t *testing.T) {
	t.Parallel()
	srv, paths := fakeAPI(t, http.StatusOK)
	k := KubeOptions{Kubeconfig: writeKubeconfig(t, srv), KubeNamespace: "sandboxes", KubeToolboxPort: 7070, KubeImagePullPolicy: "IfNotPresent"}
	rt, err := kubernetesRuntime(t.Context(), k, "node-1", nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if rt.Name() != "kubernetes" || rt.Namespace() != "sandboxes" {
		t.Errorf("runtime %s in %s, want kubernetes in sandboxes", rt.Name(), rt.Namespace())
	}
	// An empty pod list needs no secrets: one request, the pod list, with
	// the managed selector and the kubeconfig's token.
	want := []string{"GET /api/v1/namespaces/sandboxes/pods?labelSelector=drydock.managed%3Dtrue Bearer test-bearer-token"}
	if diff := cmp.Diff(want, *paths); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestKubernetesRuntimeWithoutPermission(t *testing.T) {
	t.Parallel()
	srv, _ := fakeAPI(t, http.StatusForbidden)
	k := KubeOptions{Kubeconfig: writeKubeconfig(t, srv), KubeNamespace: "sandboxes", KubeToolboxPort: 7070, KubeImagePullPolicy: "IfNotPresent"}
	_, err := kubernetesRuntime(t.Context(), k, "node-1", nil, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "namespace sandboxes") || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("start without RBAC: %v, want an error naming the namespace and the refusal", err)
	}
	_, err = kubernetesRuntime(t.Context(), KubeOptions{Kubeconfig: filepath.Join(t.TempDir(), "missing")}, "n", nil, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Error("a missing kubeconfig was accepted")
	}
}

// The flags parse as the deploy files and the README write them.
func TestKubeFlags(t *testing.T) {
	t.Parallel()
	var c struct {
		Kube KubeOptions `embed:""`
	}
	p, err := kong.New(&c, kong.Exit(func(int) { t.Fatal("exit") }), kong.Writers(io.Discard, io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse([]string{
		"--kubeconfig", "/k", "--kube-namespace", "sbx", "--kube-runtime-class", "gvisor", "--kube-gvisor", "--kube-toolbox-port", "9000",
		"--kube-orchestrator-namespace", "drydock", "--kube-image-pull-policy", "Never",
		"--kube-orchestrator-labels", "app=drydock;tier=api",
	}); err != nil {
		t.Fatal(err)
	}
	want := KubeOptions{
		Kubeconfig: "/k", KubeNamespace: "sbx", KubeRuntimeClass: "gvisor", KubeGVisor: true, KubeToolboxPort: 9000,
		KubeOrchestratorNS: "drydock", KubeImagePullPolicy: "Never",
		KubeOrchestratorLabels: map[string]string{"app": "drydock", "tier": "api"},
	}
	if diff := cmp.Diff(want, c.Kube); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
}
