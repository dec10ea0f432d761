package e2e_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// A job in a real sandbox on Docker and on Podman has a diff: live from the
// sandbox while it runs (git in the image, against the starting point the
// runner recorded before the agent ran) and stored after its sandbox is
// gone; the CLI prints it; download_url is the zip.
func TestDiffOfARealSandbox(t *testing.T) {
	t.Parallel()
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(e.env)
			if host == "" {
				t.Skipf("%s not set: no %s engine to run sandboxes on (make test starts one)", e.env, e.name)
			}
			image := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
			if image == "" {
				image = "drydock-sandbox:headless"
			}
			node := "e2e-" + e.name + "-" + strings.ReplaceAll(t.Name(), "/", "-")
			s := newServer(t, "--node-id", node)
			t.Cleanup(func() { destroyByServer(t, host, node) })
			for i, a := range s.args {
				if a == "local" && s.args[i-1] == "--runtime" {
					s.args[i] = "docker"
				}
			}
			s.args = append(s.args, "--docker-host", host, "--image-headless", image)
			s.start()
			// Two steps, then the agent waits until cancelled: the diff is
			// read while the sandbox runs, then after it is gone.
			id := s.schedule(`{"task": "diff me [fake:steps=2] [fake:delay=10ms] [fake:hang]"}`)
			var live []byte
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
				code, body := s.do("GET", "/v1/jobs/"+id+"/diff", "", "")
				if code == 200 && strings.Contains(string(body), "notes/step-002.md") {
					live = body
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no live diff with both steps: %d %s\n%s", code, body, s.logs)
				}
			}
			for _, want := range []string{
				"diff --git a/notes/step-001.md b/notes/step-001.md\nnew file mode 100644\n",
				"+# Step 2\n",
			} {
				if !strings.Contains(string(live), want) {
					t.Errorf("live diff lacks %q:\n%s", want, live)
				}
			}
			if code, body := s.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); code != 202 {
				t.Fatalf("cancel: %d %s", code, body)
			}
			j, _ := s.waitTerminal(id, 2*time.Minute)
			if j.Status != drydock.StatusCancelled || !strings.HasSuffix(j.DownloadURL, "/artifact.zip") || j.Result != j.DownloadURL || !strings.HasSuffix(j.DownloadURLTar, "/artifact.tar.gz") {
				t.Fatalf("job %s, download_url %q, result %q, download_url_tar %q", j.Status, j.DownloadURL, j.Result, j.DownloadURLTar)
			}
			code, stored := s.do("GET", "/v1/jobs/"+id+"/diff", "", "")
			if code != 200 || string(stored) != string(live) {
				t.Errorf("stored diff (%d) differs from the live one:\n%s\n---\n%s", code, stored, live)
			}
			out, err := exec.Command(binary, "diff", "--url", s.url(), id).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "+++ b/notes/step-001.md\n") {
				t.Errorf("drydock diff: %v\n%s", err, out)
			}
		})
	}
}
