package e2e_test

import (
	"bytes"
	"cmp"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// tlsInspector stands for a network that inspects TLS: an HTTPS server on
// 127.0.0.2 whose certificate comes from a CA of the test's own, which no
// image trusts. It returns the server's port and the CA's PEM.
func tlsInspector(t *testing.T) (string, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "drydock e2e inspecting CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.2"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.2")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello over inspected tls") }),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
	}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// trustProbe fetches https://127.0.0.2:PORT/ with curl, python3 and node,
// each through the sandbox's proxy and each with its own TLS stack.
const trustProbe = `curl -sS -m 15 "https://$TARGET_HOST:$TARGET_PORT/" 2>&1 | sed 's/^/curl: /'; echo
python3 -c '
import os, urllib.request
try:
    print("python: " + urllib.request.urlopen("https://%s:%s/" % (os.environ["TARGET_HOST"], os.environ["TARGET_PORT"]), timeout=15).read().decode())
except Exception as e:
    print("python error: %s" % e)
'
node -e '
const http = require("http"), tls = require("tls");
const host = process.env.TARGET_HOST, port = process.env.TARGET_PORT;
http.request({host: "127.0.0.1", port: 3128, method: "CONNECT", path: host + ":" + port}).on("connect", (res, sock) => {
  if (res.statusCode !== 200) { console.log("node error: the proxy said " + res.statusCode); return; }
  // write, not end: a half-close right after the request lets the server
  // drop the connection before it answers (seen under load).
  const s = tls.connect({socket: sock, host: host}, () => s.write("GET / HTTP/1.0\r\nHost: " + host + "\r\n\r\n"));
  let d = ""; s.on("data", c => d += c); s.on("end", () => console.log("node: " + d.split("\r\n\r\n")[1]));
  s.on("error", e => console.log("node error: " + e.message));
}).on("error", e => console.log("node error: " + e.message)).end();
'`

// chromiumProbe fetches the same page with the desktop's Chromium, which
// keeps its own trust store (NSS) and reads none of the variables, once
// curl (which reads them) shows that the proxy is open. Chromium is told
// the proxy, which it would otherwise skip for a loopback address.
const chromiumProbe = `curl -sS -m 15 "https://$TARGET_HOST:$TARGET_PORT/" 2>&1 | sed 's/^/curl: /'; echo
timeout 60 chromium --headless --disable-gpu --proxy-server=http://127.0.0.1:3128 --proxy-bypass-list='<-loopback>' --dump-dom "https://$TARGET_HOST:$TARGET_PORT/" 2>/tmp/chromium.log | tr -d '\n' | sed 's/^/chromium: /'; echo
grep -a 'Page load failed' /tmp/chromium.log | tail -1; echo node`

// A sandbox trusts the CAs the operator gives with --sandbox-ca, in curl,
// Python, node and the desktop's Chromium alike, and only then: the same sandbox setup without
// the flag fails the TLS handshake. The destination reaches the job through
// --egress-default, so the server-wide default is exercised end to end too.
func TestSandboxTrustsTheOperatorsCAs(t *testing.T) {
	t.Parallel()
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(e.env)
			if host == "" {
				t.Skipf("%s not set: no %s engine to run sandboxes on (make test starts one)", e.env, e.name)
			}
			trustsTheOperatorsCAs(t, host)
		})
	}
}

func trustsTheOperatorsCAs(t *testing.T, host string) {
	port, caPEM := tlsInspector(t)
	caFile := filepath.Join(t.TempDir(), "inspecting-ca.crt")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	serve := func(t *testing.T, extra ...string) *server {
		t.Helper()
		s := dockerServer(t, host, append([]string{"--egress-private", "127.0.0.2/32", "--egress-default", "127.0.0.2:" + port}, extra...)...)
		s.start()
		return s
	}
	// probe runs trustProbe in the job's sandbox as the agent's commands
	// run (through toolboxd, with the job's variables).
	probe := func(t *testing.T, s *server, id string, script ...string) string {
		t.Helper()
		command := trustProbe
		if len(script) > 0 {
			command = script[0]
		}
		rt := engineRuntime(t, host)
		var sb *drydock.Sandbox
		for deadline := time.Now().Add(2 * time.Minute); sb == nil; time.Sleep(200 * time.Millisecond) {
			sbs, err := rt.List(t.Context(), map[string]string{drydock.LabelServer: s.node, drydock.LabelJob: id})
			if err != nil {
				t.Fatal(err)
			}
			if len(sbs) == 1 && sbs[0].State == drydock.SandboxRunning {
				sb = jobSandbox(t, rt, s.node, id)
			} else if j := s.status(id); j.Status.Terminal() || time.Now().After(deadline) {
				t.Fatalf("job %s: %s %q\n%s", id, j.Status, j.Error, s.logs)
			}
		}
		tb := toolbox.New(sb.Endpoint, sb.Token)
		defer tb.Close()
		// The proxy opens once the sandbox's variables are set; until then
		// curl hears toolboxd's 502.
		var out bytes.Buffer
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(300 * time.Millisecond) {
			out.Reset()
			_, err := tb.Exec(t.Context(), toolbox.ExecRequest{Command: command, Env: map[string]string{"TARGET_HOST": "127.0.0.2", "TARGET_PORT": port}}, &out, &out)
			if err == nil && !strings.Contains(out.String(), "502") && strings.Contains(out.String(), "node") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the probe never got past the proxy's start: %v %q\n%s", err, out.String(), s.logs)
			}
		}
		t.Logf("probe:\n%s", out.String())
		return out.String()
	}
	const hang = `{"task": "wait [fake:steps=0] [fake:hang]", "timeout": "10m"}`
	end := func(t *testing.T, s *server, id string) *drydock.Job {
		t.Helper()
		if code, body := s.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); code != 202 {
			t.Fatalf("cancel: %d %s", code, body)
		}
		j, _ := s.waitTerminal(id, 2*time.Minute)
		return j
	}
	trusted := func(t *testing.T, what, out string) {
		t.Helper()
		for _, tool := range []string{"curl", "python", "node"} {
			if !strings.Contains(out, tool+": hello over inspected tls") {
				t.Errorf("%s: %s does not trust the CA:\n%s", what, tool, out)
			}
		}
	}

	t.Run("without", func(t *testing.T) {
		t.Parallel()
		s := serve(t)
		id := s.schedule(hang)
		out := probe(t, s, id)
		j := end(t, s, id)
		if j.EgressSource != drydock.EgressFromDefault || len(j.Egress) != 1 {
			t.Errorf("job egress %q from %q; want the server's default", j.Egress, j.EgressSource)
		}
		for _, want := range []string{"curl: curl: (60)", "python error:", "node error:"} {
			if !strings.Contains(out, want) {
				t.Errorf("without --sandbox-ca the probe does not show %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "hello over inspected tls") {
			t.Errorf("a tool trusted the inspecting CA without --sandbox-ca:\n%s", out)
		}
	})
	t.Run("with", func(t *testing.T) {
		t.Parallel()
		s := serve(t, "--sandbox-ca", caFile)
		id := s.schedule(hang)
		trusted(t, "with --sandbox-ca", probe(t, s, id))
		end(t, s, id)
	})
	// Chromium on the desktop trusts the CA through the NSS database the
	// runner fills, although it reads none of the variables.
	t.Run("chromium", func(t *testing.T) {
		t.Parallel()
		image := cmp.Or(os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP"), "drydock-sandbox:desktop")
		s := serve(t, "--sandbox-ca", caFile, "--image-desktop", image)
		id := s.schedule(`{"task": "wait [fake:steps=0] [fake:hang]", "timeout": "10m", "profile": "desktop"}`)
		out := probe(t, s, id, chromiumProbe)
		if line, _, _ := strings.Cut(out[strings.Index(out, "chromium:")+1:], "\n"); !strings.Contains(out, "chromium: <html") || !strings.Contains(line, "hello over inspected tls") {
			t.Errorf("the desktop's Chromium does not trust the CA given with --sandbox-ca:\n%s", out)
		}
		end(t, s, id)
	})
	// A warm sandbox started before any job, and the same sandbox after the
	// server was killed and its job recovered, trust the CA as well.
	t.Run("warm-and-recovered", func(t *testing.T) {
		t.Parallel()
		s := serve(t, "--sandbox-ca", caFile, "--pool-headless", "1")
		waitIdle(t, s, 1)
		id := s.schedule(hang)
		trusted(t, "a warm sandbox", probe(t, s, id))
		if warm := metric(t, s, "drydock_sandbox_starts_total", `start="warm"`); warm != 1 {
			t.Errorf("warm starts = %v; want 1 (the job did not take the warm sandbox)", warm)
		}
		s.kill()
		s.start()
		trusted(t, "a recovered job's sandbox", probe(t, s, id))
		end(t, s, id)
	})
}
