package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock/toolbox"
)

// The daemon as it runs in a sandbox: Jupyter starts on request under the
// orchestrator's base URL and answers through the proxy route.
func TestJupyterThroughTheDaemon(t *testing.T) {
	t.Parallel()
	if err := exec.Command("/usr/bin/python3", "-c", "import jupyter_server, ipykernel").Run(); err != nil {
		t.Skip("Debian's jupyter_server and ipykernel are not installed; run scripts/testenv/sandbox-tools.sh")
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hi"), 0o644)
	ep, logs, stop := start(t, []string{"-listen", "unix://" + filepath.Join(dir, "tb.sock"), "-workspace", ws},
		map[string]string{"TOOLBOXD_TOKEN": "jupyter-daemon-token"})
	c := toolbox.New(ep, "jupyter-daemon-token")
	defer c.Close()
	hc := &http.Client{Transport: c.Transport()}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, c.BaseURL()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer jupyter-daemon-token")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	if r, _ := c.Ready(ctx); r != nil {
		for _, comp := range r.Components {
			if comp.Name == "jupyter_server" {
				t.Errorf("jupyter_server reported before anyone asked: %+v", comp)
			}
		}
	}
	base := "/jobs/daemon/jupyter/"
	code, data := call("POST", "/v1/jupyter/start", `{"base_url": "`+base+`"}`)
	if code != 200 {
		t.Fatalf("start: %d %s", code, data)
	}
	code, data = call("GET", "/v1/jupyter/proxy"+base+"api/contents", "")
	var listing struct{ Content []struct{ Name string } }
	if code != 200 || json.Unmarshal(data, &listing) != nil || len(listing.Content) != 1 || listing.Content[0].Name != "hello.txt" {
		t.Errorf("workspace through Jupyter: %d %s", code, data)
	}
	r, err := c.Ready(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, comp := range r.Components {
		if comp.Name == "jupyter_server" {
			found = comp.Ready
		}
	}
	if !found {
		t.Errorf("readiness does not report jupyter_server ready: %+v", r.Components)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "jupyter-daemon-token") {
		t.Error("the token appears in the logs")
	}
}
