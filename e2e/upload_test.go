package e2e_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// A job scheduled with `drydock schedule --workspace DIR` finds the
// directory's files (less what .gitignore names) in a real sandbox's
// workspace on Docker, on Podman and on the local runtime, unpacked before the agent's first
// step, and they are in the job's archive.
func TestUploadedWorkspaceInRealSandbox(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	for name, body := range map[string]string{
		".gitignore": "node_modules/\n*.log\n", "package.json": `{"name":"todo"}`, "src/App.tsx": "export default function App() {}\n",
		"src/deep/util.ts": "export const x = 1\n", "node_modules/react/index.js": "x", "npm-debug.log": "x",
	} {
		p := filepath.Join(project, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("src/App.tsx", filepath.Join(project, "entry.tsx")); err != nil {
		t.Fatal(err)
	}
	// The local runtime (no engine) runs the same path everywhere.
	for _, e := range append(engines(), struct{ name, env string }{"local", ""}) {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(e.env)
			if host == "" && e.env != "" {
				t.Skipf("%s not set: no %s engine to run sandboxes on (make test starts one)", e.env, e.name)
			}
			image := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
			if image == "" {
				image = "drydock-sandbox:headless"
			}
			node := "e2e-upload-" + e.name + "-" + strings.ReplaceAll(t.Name(), "/", "-")
			s := newServer(t, "--node-id", node)
			if host != "" {
				t.Cleanup(func() { destroyByServer(t, host, node) })
				for i, a := range s.args {
					if a == "local" && s.args[i-1] == "--runtime" {
						s.args[i] = "docker"
					}
				}
				s.args = append(s.args, "--docker-host", host, "--image-headless", image)
			}
			s.start()
			out, stderr, err := s.cli("schedule", "--workspace", project, "--json", "fix the failing test [fake:steps=1] [fake:delay=10ms]")
			if err != nil {
				t.Fatalf("schedule --workspace: %v\n%s%s", err, out, stderr)
			}
			var created drydock.Job
			if err := json.Unmarshal([]byte(out), &created); err != nil || created.InputSize == 0 {
				t.Fatalf("schedule printed %q (%v); want a job with input_size", out, err)
			}
			j, seen := s.waitTerminal(created.ID, 2*time.Minute)
			if j.Status != drydock.StatusComplete {
				t.Fatalf("job ended %s (%v): %s", j.Status, seen, j.Error)
			}
			_, data := s.do("GET", "/v1/jobs/"+j.ID+"/artifact.tar.gz", "", "")
			got := tarGzNames(t, data)
			for _, w := range []string{".gitignore", "package.json", "src/App.tsx", "src/deep/util.ts", "SUMMARY.md"} {
				if !slices.Contains(got, w) {
					t.Errorf("archive lacks %s: %v", w, got)
				}
			}
			if links := tarGzLinks(t, data); links["entry.tsx"] != "src/App.tsx" {
				t.Errorf("archive's links %v; want entry.tsx -> src/App.tsx", links)
			}
			for _, n := range got {
				if strings.HasPrefix(n, "node_modules") || strings.HasSuffix(n, ".log") {
					t.Errorf("archive holds %s, which .gitignore names", n)
				}
			}
			// The seeding is recorded before the agent's first call.
			seed, firstCall := -1, -1
			for i, ev := range s.events(j.ID) {
				if ev.Type == drydock.EventLog && strings.Contains(string(ev.Data), `"seed":"upload"`) && seed < 0 {
					seed = i
				}
				if ev.Type == drydock.EventToolCall && firstCall < 0 {
					firstCall = i
				}
			}
			if seed < 0 || (firstCall >= 0 && firstCall < seed) {
				t.Errorf("seed event at %d, first tool call at %d; want the seeding first", seed, firstCall)
			}
		})
	}
}

// tarGzLinks maps the symbolic links of a tar.gz to their targets.
func tarGzLinks(t *testing.T, data []byte) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return links
		}
		if h.Typeflag == tar.TypeSymlink {
			links[strings.TrimPrefix(h.Name, "./")] = h.Linkname
		}
	}
}
