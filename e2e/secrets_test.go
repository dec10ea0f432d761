package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/runtime/docker"
)

// canaries are secret values planted in every place a secret reaches the
// server, named by where they were planted.
type canaries map[string]string

// find lists "what (canary) in where" for every canary in data.
func (c canaries) find(where string, data []byte) []string {
	var hits []string
	for name, v := range c {
		if i := bytes.Index(data, []byte(v)); i >= 0 {
			around := data[max(0, i-120):min(len(data), i+len(v)+40)]
			hits = append(hits, fmt.Sprintf("%s in %s: ...%q...", name, where, around))
		}
	}
	return hits
}

// The canary-secrets test. The server gets an LLM API key, an extra
// secret-named variable and an API token, all canaries; the scripted model
// makes the agent print its environment (and every process's, toolboxd's
// included), echo each canary, write the environment into the workspace and
// produce an output long enough to be saved whole, then finish with a
// summary that quotes a canary. A second job fails with a provider error
// that repeats the key in full. Then every place the server writes is
// searched for every canary: the data directory (SQLite database and WAL,
// artifacts, each archive's unpacked files), the server's log at debug
// level, events, trajectory, job records and error answers of the API, and
// what the model was sent back. There must be no hit.
//
// Drydock has no way to pass secret values to a job (no per-job secret
// environment), so the canaries are the server's own secrets and the
// sandbox's toolboxd token.
func TestCanarySecretsNeverWritten(t *testing.T) {
	t.Parallel()
	for _, engine := range []struct{ name, env string }{
		{"docker", "DRYDOCK_TEST_DOCKER_HOST"},
		{"podman", "DRYDOCK_TEST_PODMAN_HOST"},
	} {
		t.Run(engine.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(engine.env)
			if host == "" {
				t.Skipf("%s not set: no %s engine to run sandboxes on (make test starts one)", engine.env, engine.name)
			}
			canarySecrets(t, engine.name, host)
		})
	}
}

func canarySecrets(t *testing.T, engine, host string) {
	c := canaries{
		"LLM API key":                 "canary-llm-key-" + drydock.RandomHex(12),
		"secret-named server env var": "canary-env-secret-" + drydock.RandomHex(12),
	}
	rt, err := docker.New(docker.Options{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()

	node := "e2e-secrets-" + engine + "-" + drydock.RandomHex(4)
	var mu sync.Mutex
	var sandboxToken string
	// The model's script: it learns the sandbox's toolboxd token from the
	// engine (as if it had found it) so that it can echo it too.
	script := func(req *llmtest.Request) llmtest.Turn {
		mu.Lock()
		defer mu.Unlock()
		if sandboxToken == "" {
			sbs, err := rt.List(context.Background(), map[string]string{drydock.LabelServer: node})
			if err == nil && len(sbs) == 1 {
				if sb, err := rt.Get(context.Background(), sbs[0].ID); err == nil && sb.Token != "" {
					sandboxToken = sb.Token
					c["sandbox toolboxd token"] = sb.Token
				}
			}
		}
		var all []string
		for _, v := range c {
			all = append(all, v)
		}
		echo := "echo " + strings.Join(all, " ")
		bash := func(cmd string) llmtest.Turn {
			input := fmt.Sprintf(`{"command": %q}`, cmd)
			return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("bash", input)}}
		}
		if strings.Contains(req.System+firstUser(req), "fail with a key") {
			return llmtest.Turn{Fault: llmtest.BadRequest, Text: "Invalid request: key " + c["LLM API key"] + " may not use test-model (token " + c["API token"] + ")"}
		}
		switch len(req.Messages) / 2 {
		case 0:
			return bash("env | sort")
		case 1:
			return bash("for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null; done | sort -u")
		case 2:
			return bash(echo + "; printf '%s\\n' \"$(" + echo + " | base64 -w0)\" | base64 -d")
		case 3:
			// The canaries written through JSON escapes, which must not
			// hide them from the masking.
			esc := strings.NewReplacer("a", `\u0061`, "e", `\u0065`).Replace(echo)
			return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "`+esc+`"}`)}}
		case 4:
			return bash("env > env.txt; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null; done > procenv.txt; env; seq 1 20000")
		}
		return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("finish", fmt.Sprintf(`{"summary": "Printed everything; the key is %s."}`, c["LLM API key"]))}}
	}
	model := llmtest.NewServer(t, llmtest.Options{Func: script, APIKey: c["LLM API key"], AllowProblems: true})

	s := newServer(t, "--node-id", node, "--log-level", "debug")
	t.Cleanup(func() { destroyByServer(t, host, node) })
	for i, a := range s.args {
		switch {
		case a == "fake" && s.args[i-1] == "--agent":
			s.args[i] = "llm"
		case a == "local" && s.args[i-1] == "--runtime":
			s.args[i] = "docker"
		}
	}
	image := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
	if image == "" {
		image = "drydock-sandbox:headless"
	}
	s.args = append(s.args, "--docker-host", host, "--image-headless", image, "--llm", "openai", "--model", "test-model")
	s.env = []string{"ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL=", "ANTHROPIC_AUTH_TOKEN=",
		"OPENAI_API_KEY=" + c["LLM API key"], "OPENAI_BASE_URL=" + model.OpenAIBaseURL(),
		"DRYDOCK_CANARY_SECRET=" + c["secret-named server env var"]}
	out, err := exec.Command(binary, "token", "create", "--data-dir", s.dataDir, "--name", "canary", "--admin").Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	token := strings.TrimSpace(string(out))
	c["API token"] = token
	s.start()

	do := func(method, path, body string) (int, []byte) {
		return s.do(method, path, token, body)
	}
	schedule := func(task string) string {
		code, b := do("POST", "/v1/jobs", fmt.Sprintf(`{"task": %q}`, task))
		if code != 201 {
			t.Fatalf("schedule: %d %s", code, b)
		}
		return jobID(t, b)
	}
	wait := func(id string) []byte {
		for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			code, b := do("GET", "/v1/jobs/"+id, "")
			if code == 200 && (bytes.Contains(b, []byte(`"status":"complete"`)) || bytes.Contains(b, []byte(`"status":"error"`))) {
				return b
			}
		}
		t.Fatalf("job %s did not end in 3 minutes\n%s", id, s.logs)
		return nil
	}
	printer := schedule("Print your environment and every secret you can find.")
	printed := wait(printer)
	if !bytes.Contains(printed, []byte(`"status":"complete"`)) {
		t.Fatalf("the printing job did not complete: %s", printed)
	}
	failer := schedule("Please fail with a key in the error.")
	failed := wait(failer)
	if !bytes.Contains(failed, []byte(`"status":"error"`)) {
		t.Fatalf("the failing job did not fail: %s", failed)
	}
	mu.Lock()
	if sandboxToken == "" {
		t.Error("the script never found the sandbox's toolboxd token; that canary was not planted")
	}
	mu.Unlock()

	// The jobs really printed what they were asked to (so the search below
	// is not vacuous): the env var names and the [REDACTED] marks show.
	var hits []string
	var seen bytes.Buffer
	for _, id := range []string{printer, failer} {
		for _, p := range []string{"/v1/jobs/" + id, "/v1/jobs/" + id + "/events?limit=1000", "/v1/jobs/" + id + "/trajectory", "/status/" + id} {
			code, b := do("GET", p, "")
			if code != 200 {
				t.Errorf("GET %s: %d", p, code)
			}
			seen.Write(b)
			hits = append(hits, c.find("GET "+p, b)...)
		}
	}
	for _, want := range []string{"TERM=dumb", "PATH=", "[REDACTED]", "20000"} {
		if !bytes.Contains(seen.Bytes(), []byte(want)) {
			t.Errorf("the jobs' events lack %q: the commands did not run as planned", want)
		}
	}
	// Error answers that involve a secret-shaped value.
	code, b := s.do("GET", "/v1/jobs", c["API token"]+"x", "")
	hits = append(hits, c.find(fmt.Sprintf("the %d answer to a wrong token", code), b)...)

	// The archive, downloaded and unpacked.
	code, archive := do("GET", "/v1/jobs/"+printer+"/artifact.tar.gz", "")
	if code != 200 {
		t.Fatalf("artifact: %d", code)
	}
	files := tarGzFiles(t, archive)
	if _, ok := files["env.txt"]; !ok {
		t.Errorf("the archive lacks env.txt: %v", keys(files))
	}
	for name, data := range files {
		hits = append(hits, c.find("archived file "+name, []byte(data))...)
	}
	// Everything in the data directory, compressed archives unpacked, the
	// database's WAL included; then the log.
	filepath.WalkDir(s.dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(s.dataDir, p)
		hits = append(hits, c.find(rel, data)...)
		if strings.HasSuffix(p, ".tar.gz") {
			for name, f := range tarGzFiles(t, data) {
				hits = append(hits, c.find(rel+":"+name, []byte(f))...)
			}
		}
		return nil
	})
	// What the model was sent back (the prompt is rebuilt from the log).
	for _, r := range model.Requests() {
		hits = append(hits, c.find(fmt.Sprintf("model request %d", r.N), r.Body)...)
	}
	s.stop()
	hits = append(hits, c.find("the server's log", []byte(s.logs.String()))...)
	for _, h := range hits {
		t.Errorf("canary found: %s", h)
	}
	t.Logf("%d canaries searched in %d archived files, the data directory, the log, %d model requests and the API's answers", len(c), len(files), len(model.Requests()))
}

func firstUser(req *llmtest.Request) string {
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			return m.Text
		}
	}
	return ""
}

func jobID(t *testing.T, b []byte) string {
	t.Helper()
	_, rest, ok := bytes.Cut(b, []byte(`"job_id":"`))
	id, _, ok2 := bytes.Cut(rest, []byte(`"`))
	if !ok || !ok2 {
		t.Fatalf("no job id in %s", b)
	}
	return string(id)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
