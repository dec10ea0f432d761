package e2e_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/runtime/runtimetest"
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
// A third job carries a per-job secret (scheduled with the CLI's --secret,
// the value taken from the CLI's environment): its commands prove that the
// sandbox's processes see the right value, print the environment, write the
// value into workspace files (and a file name) and print it from Python;
// its workspace is read through the file API while it runs. That value is
// a canary too, searched everywhere above plus in both archive formats, the
// file API's answers and the CLI's output.
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
		// Looks like nothing: only the job's secrets mask it.
		"job secret": "plain-" + drydock.RandomHex(12),
	}
	rt := engineRuntime(t, host)

	node := "e2e-secrets-" + engine + "-" + drydock.RandomHex(4)
	live := &liveFiles{}
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
		for name, v := range c {
			// Only the job that has it as a secret masks it.
			if name != "job secret" {
				all = append(all, v)
			}
		}
		echo := "echo " + strings.Join(all, " ")
		bash := func(cmd string) llmtest.Turn {
			input := fmt.Sprintf(`{"command": %q}`, cmd)
			return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("bash", input)}}
		}
		if strings.Contains(req.System+firstUser(req), "use the job secret") {
			return secretJobTurn(req, c["job secret"], bash, live)
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
	// The job secret needs toolboxd's PUT /v1/env (API 4), which a
	// prebuilt image may predate.
	image := runtimetest.CurrentImage(t, host)
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
	live.set(s.url(), token)

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
	var hits []string
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
	secretJob, cliOut := scheduleWithSecret(t, s, token, c["job secret"])
	hits = append(hits, c.find("the CLI's output", []byte(cliOut))...)
	secretDone := wait(secretJob)
	if !bytes.Contains(secretDone, []byte(`"status":"complete"`)) || !bytes.Contains(secretDone, []byte(`"secret_names":["CANARY_TOKEN"]`)) {
		t.Fatalf("the secret job: %s", secretDone)
	}
	hits = append(hits, live.check(t, c)...)
	mu.Lock()
	if sandboxToken == "" {
		t.Error("the script never found the sandbox's toolboxd token; that canary was not planted")
	}
	mu.Unlock()

	// The jobs really printed what they were asked to (so the search below
	// is not vacuous): the env var names and the [REDACTED] marks show.
	var seen bytes.Buffer
	for _, id := range []string{printer, failer, secretJob} {
		for _, p := range []string{"/v1/jobs/" + id, "/v1/jobs/" + id + "/events?limit=1000", "/v1/jobs/" + id + "/trajectory", "/status/" + id} {
			code, b := do("GET", p, "")
			if code != 200 {
				t.Errorf("GET %s: %d", p, code)
			}
			seen.Write(b)
			hits = append(hits, c.find("GET "+p, b)...)
		}
	}
	for _, want := range []string{"TERM=dumb", "PATH=", "[REDACTED]", "20000", "secret-ok", "python-ok", "CANARY_TOKEN=[REDACTED]"} {
		if !bytes.Contains(seen.Bytes(), []byte(want)) {
			t.Errorf("the jobs' events lack %q: the commands did not run as planned", want)
		}
	}
	// Error answers that involve a secret-shaped value.
	code, b := s.do("GET", "/v1/jobs", c["API token"]+"x", "")
	hits = append(hits, c.find(fmt.Sprintf("the %d answer to a wrong token", code), b)...)
	for _, bad := range []string{
		`{"task": "x", "secrets": {"PATH": "` + c["job secret"] + `"}}`,
		`{"task": "x", "secrets": {"A-B": "` + c["job secret"] + `"}}`,
		`{"task": "x", "secrets": {"OK": "` + c["job secret"] + `", "OK": 1}}`,
		`{"task": "x", "secrets": {"OK": "` + c["job secret"] + strings.Repeat("x", 5000) + `"}}`,
	} {
		code, b := do("POST", "/v1/jobs", bad)
		if code/100 != 4 {
			t.Errorf("a bad secret was answered %d", code)
		}
		hits = append(hits, c.find(fmt.Sprintf("the %d answer to a bad secret", code), b)...)
	}

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
	hits = append(hits, secretArchives(t, do, secretJob, c)...)
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

// secretJobTurn is the model's script for the job with a secret: it proves
// the sandbox sees the value, then spreads it everywhere it can.
func secretJobTurn(req *llmtest.Request, value string, bash func(string) llmtest.Turn, live *liveFiles) llmtest.Turn {
	switch len(req.Messages) / 2 {
	case 0:
		return bash(`test "$CANARY_TOKEN" = "` + value + `" && echo secret-ok || echo secret-missing`)
	case 1:
		return bash("env | sort")
	case 2:
		return bash(`printf '%s\n' "$CANARY_TOKEN" > secret.txt; printf 'x' > "name-$CANARY_TOKEN.txt"; echo written`)
	case 3:
		code := `import os; v = os.environ["CANARY_TOKEN"]; print(v); print("python-ok" if v == "` + value + `" else "python-wrong")`
		input, _ := json.Marshal(map[string]string{"language": "python", "code": code})
		return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("execute_code", string(input))}}
	}
	// The files exist and the job still runs: read them through the API.
	live.fetch()
	input, _ := json.Marshal(map[string]string{"summary": "Used " + value + " as asked."})
	return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("finish", string(input))}}
}

// liveFiles reads the running secret job's workspace through the file API
// from the model's script (a goroutine of the model server: it records,
// the test checks later).
type liveFiles struct {
	mu          sync.Mutex
	url, token  string
	listing     []byte
	secretFile  []byte
	problems    []string
	fetched     bool
	stars, name string
}

func (l *liveFiles) set(url, token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.url, l.token = url, token
}

func (l *liveFiles) get(path string) (int, []byte, error) {
	req, _ := http.NewRequest("GET", l.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+l.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (l *liveFiles) fetch() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fetched {
		return
	}
	l.fetched = true
	code, b, err := l.get("/v1/jobs?status=running")
	var page struct {
		Jobs []drydock.Job `json:"jobs"`
	}
	if err != nil || code != 200 || json.Unmarshal(b, &page) != nil {
		l.problems = append(l.problems, fmt.Sprintf("list running jobs: %d %v", code, err))
		return
	}
	id := ""
	for _, j := range page.Jobs {
		if slices.Contains(j.SecretNames, "CANARY_TOKEN") {
			id = j.ID
		}
	}
	if id == "" {
		l.problems = append(l.problems, "the secret job is not running while its script runs")
		return
	}
	if code, l.listing, err = l.get("/v1/jobs/" + id + "/files/"); code != 200 || err != nil {
		l.problems = append(l.problems, fmt.Sprintf("live listing: %d %v %s", code, err, l.listing))
	}
	if code, l.secretFile, err = l.get("/v1/jobs/" + id + "/files/secret.txt"); code != 200 || err != nil {
		l.problems = append(l.problems, fmt.Sprintf("live secret.txt: %d %v %s", code, err, l.secretFile))
	}
}

// check reports the canaries in what the live file API answered and fails
// the test unless it answered the masked files.
func (l *liveFiles) check(t *testing.T, c canaries) []string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.problems {
		t.Error(p)
	}
	if !l.fetched {
		t.Error("the script never read the live workspace")
	}
	stars := strings.Repeat("*", len(c["job secret"]))
	if string(l.secretFile) != stars+"\n" {
		t.Errorf("live secret.txt = %q; want the value masked", l.secretFile)
	}
	if !bytes.Contains(l.listing, []byte(`"name-`+stars+`.txt"`)) {
		t.Errorf("the live listing lacks the masked file name: %s", l.listing)
	}
	return append(c.find("the live listing", l.listing), c.find("live secret.txt", l.secretFile)...)
}

// scheduleWithSecret schedules the secret job with the CLI, the value in
// the CLI's environment, after checking that the CLI refuses a value on its
// command line. It returns the job id and everything the CLI printed.
func scheduleWithSecret(t *testing.T, s *server, token, value string) (string, string) {
	t.Helper()
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "DRYDOCK_URL="+s.url(), "DRYDOCK_TOKEN="+token, "CANARY_TOKEN="+value)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	refused, err := cli("schedule", "x", "--secret", "CANARY_TOKEN="+value)
	if err == nil || !strings.Contains(refused, "not NAME=VALUE") {
		t.Errorf("--secret NAME=VALUE was not refused: %v\n%s", err, refused)
	}
	out, err := cli("schedule", "Please use the job secret.", "--secret", "CANARY_TOKEN")
	if err != nil {
		t.Fatalf("drydock schedule --secret: %v\n%s", err, out)
	}
	id, _, _ := strings.Cut(out, "\n")
	return strings.TrimSpace(id), refused + out
}

// secretArchives searches the secret job's archive in both formats and its
// files as the file API serves them from the archive, and checks that the
// value is there masked (so the search is not vacuous).
func secretArchives(t *testing.T, do func(method, path, body string) (int, []byte), id string, c canaries) []string {
	t.Helper()
	var hits []string
	stars := strings.Repeat("*", len(c["job secret"]))
	code, gz := do("GET", "/v1/jobs/"+id+"/artifact.tar.gz", "")
	if code != 200 {
		t.Fatalf("secret job's tar.gz: %d", code)
	}
	tgz := tarGzFiles(t, gz)
	code, zb := do("GET", "/v1/jobs/"+id+"/artifact.zip", "")
	if code != 200 {
		t.Fatalf("secret job's zip: %d", code)
	}
	zr, err := zip.NewReader(bytes.NewReader(zb), int64(len(zb)))
	if err != nil {
		t.Fatal(err)
	}
	zipped := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		zipped[strings.TrimPrefix(f.Name, "./")] = string(b)
	}
	for format, files := range map[string]map[string]string{"tar.gz": tgz, "zip": zipped} {
		if files["secret.txt"] != stars+"\n" {
			t.Errorf("%s: secret.txt = %q; want the value masked", format, files["secret.txt"])
		}
		if _, ok := files["name-"+stars+".txt"]; !ok {
			t.Errorf("%s: no file named with the masked value: %v", format, keys(files))
		}
		for name, data := range files {
			hits = append(hits, c.find(format+" name "+name, []byte(name))...)
			hits = append(hits, c.find(format+" file "+name, []byte(data))...)
		}
	}
	hits = append(hits, c.find("the zip", zb)...)
	for _, p := range []string{"/v1/jobs/" + id + "/files/", "/v1/jobs/" + id + "/files/secret.txt"} {
		code, b := do("GET", p, "")
		if code != 200 {
			t.Errorf("GET %s: %d %s", p, code, b)
		}
		hits = append(hits, c.find("GET "+p, b)...)
	}
	return hits
}
