package runner_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runner"
	"github.com/drydockhq/drydock/toolbox"
)

// testCAPEM is a fresh self-signed CA certificate.
func testCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "drydock runner test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// envProbe reports what the sandbox's processes see: each trust variable
// and the file SSL_CERT_FILE names.
type envProbe struct {
	mu  sync.Mutex
	out string
}

func (a *envProbe) Run(ctx context.Context, run *drydock.AgentRun) (*drydock.AgentOutcome, error) {
	c := toolbox.New(run.Sandbox.Endpoint, run.Sandbox.Token)
	defer c.Close()
	var out bytes.Buffer
	script := `for v in ` + strings.Join(runner.TrustEnv, " ") + `; do eval "echo $v=\${$v:-unset}"; done; echo ---; cat "$NODE_EXTRA_CA_CERTS"`
	if _, err := c.Exec(ctx, toolbox.ExecRequest{Command: script}, &out, &out); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.out = out.String()
	a.mu.Unlock()
	return &drydock.AgentOutcome{Summary: "probed"}, nil
}

// The server's trusted CAs reach every process of the sandbox as one
// bundle (the image's own first) named by every usual variable, outside the
// workspace; a job's secret of the same name wins over the server's value.
// Not parallel: the local runtime's sandbox is this process, whose HOME is
// where the bundle goes.
func TestTrustedCAsReachTheSandboxProcesses(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	ca := testCAPEM(t)
	for _, withSecret := range []bool{false, true} {
		b := setup(t)
		probe := &envProbe{}
		b.deps.Agent = probe
		var id string
		if withSecret {
			box := newBox(t)
			b.deps.Secrets = box
			id = b.createSealed(t, box, drydock.SecretValues{"PIP_CERT": "/the/job/own.pem"})
		} else {
			id = b.create(t, "probe")
		}
		b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond, TrustedCAs: ca})
		j := waitTerminal(t, b.store, id)
		if j.Status != drydock.StatusComplete {
			t.Fatalf("job %s: %q", j.Status, j.Error)
		}
		probe.mu.Lock()
		out := probe.out
		probe.mu.Unlock()
		vars, bundle, _ := strings.Cut(out, "---\n")
		want := home + "/.drydock/ca-certificates.crt"
		for _, v := range runner.TrustEnv {
			w := want
			if withSecret && v == "PIP_CERT" {
				w = "/the/job/own.pem"
			}
			if !strings.Contains(vars, v+"="+w+"\n") {
				t.Errorf("secret=%v: the sandbox's %s is not %s:\n%s", withSecret, v, w, vars)
			}
		}
		if !strings.HasSuffix(strings.TrimSpace(bundle), strings.TrimSpace(string(ca))) {
			t.Errorf("the bundle does not end with the server's CA:\n%s", bundle)
		}
		if sys, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil && !strings.HasPrefix(bundle, string(sys)) {
			t.Errorf("the bundle does not start with the system's (%d bytes; the bundle is %d)", len(sys), len(bundle))
		}
		_, files := b.everything(t, j)
		for name := range files {
			if strings.Contains(name, "ca-certificates") {
				t.Errorf("the bundle is in the workspace archive as %s", name)
			}
		}
	}
}

// Without trusted CAs nothing is installed and no variable is set.
func TestNoTrustedCAsSetsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	probe := &envProbe{}
	b.deps.Agent = probe
	id := b.create(t, "probe")
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	if j := waitTerminal(t, b.store, id); j.Status != drydock.StatusComplete {
		t.Fatalf("job %s: %q", j.Status, j.Error)
	}
	probe.mu.Lock()
	defer probe.mu.Unlock()
	// The local runtime's processes inherit this host's variables, which
	// may name its own bundle; none may name an installed one.
	if vars, _, _ := strings.Cut(probe.out, "---"); strings.Contains(vars, "/.drydock/") {
		t.Errorf("a bundle was installed without trusted CAs:\n%s", vars)
	}
}

// A job whose secrets and the trust variables together exceed what a
// sandbox takes fails before its agent starts, saying how many secrets fit.
// Not parallel: see TestTrustedCAsReachTheSandboxProcesses.
func TestTooManySecretsWithTrustedCAsFailsClearly(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	b := setup(t)
	box := newBox(t)
	b.deps.Secrets = box
	b.deps.Agent = &envProbe{}
	secrets := drydock.SecretValues{}
	for i := range drydock.MaxSecrets {
		secrets[fmt.Sprintf("S%02d", i)] = "value-long-enough"
	}
	id := b.createSealed(t, box, secrets)
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond, TrustedCAs: testCAPEM(t)})
	j := waitTerminal(t, b.store, id)
	want := fmt.Sprintf("give the job at most %d secrets", drydock.MaxSecrets-len(runner.TrustEnv))
	if j.Status != drydock.StatusError || !strings.Contains(j.Error, want) {
		t.Errorf("job %s %q; want an error saying %q", j.Status, j.Error, want)
	}
}
