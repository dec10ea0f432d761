package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/pool"
	"github.com/drydockhq/drydock/runtime/docker"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/drydockhq/drydock/toolbox"
)

// The per-job secret's name in these tests; each test makes its own value.
const secretVar = "DD_JOB_SECRET"

// unset is what the probes print for a variable the process does not have.
const unset = "<unset>"

// envSeen is what a sandbox's processes see of secretVar, by how toolboxd
// started them, and whether any process's environment holds a value.
type envSeen struct {
	exec, shell, python string
	// procs are the environments of every process the sandbox user can
	// read, toolboxd's own included when it were dumpable.
	procs string
}

// probeEnv asks the sandbox's toolboxd what its processes see: a command
// (exec), a new shell session unless warm (a warm sandbox must stay
// claimable, which a session would prevent), and Python (in the kernel
// when the sandbox has one, else as a command).
func probeEnv(t *testing.T, tb *toolbox.Client, warm, kernel bool) envSeen {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var seen envSeen
	show := `printf '%s' "${` + secretVar + `-` + unset + `}"`
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		res, err := tb.Exec(ctx, toolbox.ExecRequest{Args: args, Timeout: drydock.Duration(time.Minute)}, &out, &errOut)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exec %q: %v %+v %s", args, err, res, errOut.String())
		}
		return out.String()
	}
	seen.exec = run("sh", "-c", show)
	seen.procs = run("sh", "-c", `for p in /proc/[0-9]*; do tr '\0' '\n' < $p/environ 2>/dev/null; done; true`)
	pyCode := `import os; print(os.environ.get("` + secretVar + `", "` + unset + `"), end="")`
	if kernel {
		res, err := tb.RunCode(ctx, toolbox.CodeRequest{Language: toolbox.LangPython, Code: pyCode})
		if err != nil || res.Error {
			t.Fatalf("python: %v %+v", err, res)
		}
		for _, o := range res.Outputs {
			if o.Kind == toolbox.OutputStream {
				seen.python += o.Text
			}
		}
	} else {
		seen.python = run("python3", "-c", pyCode)
	}
	if warm {
		return seen
	}
	sess, err := tb.CreateSession(ctx, toolbox.SessionRequest{})
	if err != nil {
		t.Fatalf("new shell session: %v", err)
	}
	defer tb.DeleteSession(context.WithoutCancel(ctx), sess.ID)
	res, err := tb.Run(ctx, sess.ID, toolbox.RunRequest{Command: show, Timeout: drydock.Duration(time.Minute)})
	if err != nil {
		t.Fatalf("run in a new shell session: %v", err)
	}
	seen.shell = strings.TrimSpace(res.Output)
	return seen
}

// wantSeen fails the test unless every probe saw want (a value, or unset)
// and the processes' environments hold it (or, for unset, do not hold
// notIn).
func (s envSeen) check(t *testing.T, where, want, notIn string) {
	t.Helper()
	for how, got := range map[string]string{"a command": s.exec, "python": s.python, "a new shell session": s.shell} {
		if how == "a new shell session" && got == "" {
			continue // not probed: a warm sandbox
		}
		if got != want {
			t.Errorf("%s: %s sees %s=%q; want %q", where, how, secretVar, mask(got, notIn), mask(want, notIn))
		}
	}
	switch {
	case want != unset && !strings.Contains(s.procs, secretVar+"="+want):
		t.Errorf("%s: no process's environment holds the value", where)
	case notIn != "" && strings.Contains(s.procs, notIn):
		t.Errorf("%s: a process's environment holds another job's value", where)
	}
}

// mask hides v in s, for the test's messages.
func mask(s, v string) string {
	if v == "" {
		return s
	}
	return strings.ReplaceAll(s, v, strings.Repeat("*", len(v)))
}

// newSecretValue is a value no other test and nothing in the sandbox has.
func newSecretValue(what string) string { return what + "-" + drydock.RandomHex(12) }

// scheduleSecretJob schedules a fake-agent job with one secret through
// POST /v1/jobs. The task quotes the value, as a careless user might: the
// fake agent writes the task into its tool calls, so the job's events
// would hold the value unless the runner masked them.
func scheduleSecretJob(t *testing.T, s *server, value, directives string) string {
	t.Helper()
	body := fmt.Sprintf(`{"task": "use %s %s", "timeout": "10m", "secrets": {%q: %q}}`, value, directives, secretVar, value)
	code, b := s.do("POST", "/v1/jobs", "", body)
	if code != 201 {
		t.Fatalf("schedule a job with a secret: %d %s", code, mask(string(b), value))
	}
	return jobID(t, b)
}

// waitObservations waits until the job has emitted n observations: its
// sandbox is ready and had the job's secrets before the first.
func waitObservations(t *testing.T, s *server, id string, n int, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		got := 0
		for _, ev := range s.events(id) {
			if ev.Type == drydock.EventObservation {
				got++
			}
		}
		if got >= n {
			return
		}
		if j := s.status(id); j.Status.Terminal() || time.Now().After(deadline) {
			t.Fatalf("job %s: %d of %d observations; %s %q\n%s", id, got, n, j.Status, j.Error, s.logs)
		}
	}
}

// eventsMasked fails the test when the job's events hold value anywhere,
// and unless they hold it masked (so that the search is not vacuous: the
// task the fake agent quotes contains it).
func eventsMasked(t *testing.T, s *server, id, value string) {
	t.Helper()
	var all bytes.Buffer
	for _, ev := range s.events(id) {
		all.Write(ev.Data)
	}
	code, b := s.do("GET", fmt.Sprintf("/v1/jobs/%s/events?limit=1000", id), "", "")
	if code != 200 {
		t.Fatalf("events: %d", code)
	}
	all.Write(b)
	if bytes.Contains(all.Bytes(), []byte(value)) {
		t.Errorf("job %s: the events hold the secret value", id)
	}
	if !bytes.Contains(all.Bytes(), []byte("use "+strings.Repeat("*", len(value)))) {
		t.Errorf("job %s: the events do not quote the task with the value masked; the check above proves nothing", id)
	}
}

// currentImageServer is dockerServer with sandboxes in an image with this
// tree's toolboxd (a job's secrets need toolbox API 4).
func currentImageServer(t *testing.T, host string, extra ...string) *server {
	t.Helper()
	img := runtimetest.CurrentImage(t, host)
	s := dockerServer(t, host, extra...)
	for i, a := range s.args {
		if a == "--image-headless" {
			s.args[i+1] = img
		}
	}
	return s
}

// jobSandbox returns the job's sandbox, with its toolboxd token, from the
// engine.
func jobSandbox(t *testing.T, rt *docker.Runtime, node, id string) *drydock.Sandbox {
	t.Helper()
	sbs, err := rt.List(t.Context(), map[string]string{drydock.LabelServer: node, drydock.LabelJob: id})
	if err != nil || len(sbs) != 1 {
		t.Fatalf("sandboxes of job %s: %v %v", id, sbs, err)
	}
	sb, err := rt.Get(t.Context(), sbs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// metric returns the sum of the samples of name whose labels include all
// of labels (`k="v"` each).
func metric(t *testing.T, s *server, name string, labels ...string) float64 {
	t.Helper()
	code, b := s.do("GET", "/metrics", "", "")
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(line, l)
		}
		if !match {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += f
	}
	return sum
}

// waitIdle waits until the warm pool holds n ready headless sandboxes.
func waitIdle(t *testing.T, s *server, n float64) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); metric(t, s, "drydock_pool_idle", `profile="headless"`) != n; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pool never had %v idle sandboxes\n%s", n, s.logs)
		}
	}
}

// endJob cancels a running job and waits for its end.
func endJob(t *testing.T, s *server, id string) *drydock.Job {
	t.Helper()
	if code, body := s.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); code != 202 {
		t.Fatalf("cancel %s: %d %s", id, code, body)
	}
	j, _ := s.waitTerminal(id, 2*time.Minute)
	return j
}

// A job with a secret that takes a warm sandbox gives it to that
// sandbox's processes; the next job, without secrets, takes the pool's
// replacement sandbox and sees nothing of it, and neither does the
// replacement while it waits.
func TestSecretsWarmPool(t *testing.T) {
	t.Parallel()
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(e.env)
			if host == "" {
				t.Skipf("%s not set: no %s engine to run sandboxes on (make test starts one)", e.env, e.name)
			}
			s := currentImageServer(t, host, "--pool-headless", "1")
			node := s.node
			s.start()
			rt := engineRuntime(t, host)
			waitIdle(t, s, 1)

			value := newSecretValue("warm")
			first := scheduleSecretJob(t, s, value, "[fake:steps=1] [fake:delay=0s] [fake:hang]")
			waitObservations(t, s, first, 1, 2*time.Minute)
			if warm := metric(t, s, "drydock_sandbox_starts_total", `start="warm"`); warm != 1 {
				t.Fatalf("warm starts after the first job = %v; want 1 (it did not take the warm sandbox)", warm)
			}
			sb1 := jobSandbox(t, rt, node, first)
			tb1 := toolbox.New(sb1.Endpoint, sb1.Token)
			defer tb1.Close()
			probeEnv(t, tb1, false, true).check(t, "the first job's warm sandbox", value, "")

			// The pool's replacement, while it waits for a job.
			waitIdle(t, s, 1)
			sbs, err := rt.List(t.Context(), map[string]string{drydock.LabelServer: node})
			if err != nil {
				t.Fatal(err)
			}
			var spare *drydock.Sandbox
			for _, sb := range sbs {
				if _, ok := pool.Unclaimed(sb); ok {
					if spare, err = rt.Get(t.Context(), sb.ID); err != nil {
						t.Fatal(err)
					}
				}
			}
			if spare == nil || spare.ID == sb1.ID {
				t.Fatalf("no replacement warm sandbox among %v", sbs)
			}
			tbSpare := toolbox.New(spare.Endpoint, spare.Token)
			defer tbSpare.Close()
			probeEnv(t, tbSpare, true, true).check(t, "the replacement warm sandbox", unset, value)

			second := s.schedule(`{"task": "no secrets [fake:steps=1] [fake:delay=0s] [fake:hang]", "timeout": "10m"}`)
			waitObservations(t, s, second, 1, 2*time.Minute)
			if warm := metric(t, s, "drydock_sandbox_starts_total", `start="warm"`); warm != 2 {
				t.Fatalf("warm starts after the second job = %v; want 2", warm)
			}
			sb2 := jobSandbox(t, rt, node, second)
			if sb2.ID != spare.ID {
				t.Errorf("the second job took %s, not the replacement %s", sb2.ID, spare.ID)
			}
			tb2 := toolbox.New(sb2.Endpoint, sb2.Token)
			defer tb2.Close()
			probeEnv(t, tb2, false, true).check(t, "the second job's warm sandbox", unset, value)

			for _, id := range []string{first, second} {
				if j := endJob(t, s, id); j.Status != drydock.StatusCancelled {
					t.Errorf("job %s ended %s: %s", id, j.Status, j.Error)
				}
			}
			eventsMasked(t, s, first, value)
			for _, ev := range s.events(second) {
				if bytes.Contains(ev.Data, []byte(value)) {
					t.Errorf("the second job's events hold the first job's value")
				}
			}
			if bytes.Contains([]byte(s.logs.String()), []byte(value)) {
				t.Error("the server's log holds the value")
			}
		})
	}
}

// sealedSecrets returns the job's sealed secrets as the SQLite store holds
// them (nil once erased).
func sealedSecrets(t *testing.T, dataDir, id string) []byte {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "drydock.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sealed []byte
	if err := db.QueryRowContext(t.Context(), `SELECT secrets_sealed FROM jobs WHERE id = ?`, id).Scan(&sealed); err != nil {
		t.Fatalf("read job %s from the store: %v", id, err)
	}
	return sealed
}

// A job whose server is killed while it runs is recovered by the next
// server process, which opens its secrets again and gives them to the
// sandbox it reattaches to: the recovered job's new shells, commands and
// Python see the value, its events stay masked, and once it ends the store
// holds no sealed value. Restarted with another secrets key, the server
// refuses to start; told to adopt that key, it fails the job with a message
// that names the flag, and keeps running.
func TestSecretsRecovery(t *testing.T) {
	t.Parallel()
	host := os.Getenv("DRYDOCK_TEST_DOCKER_HOST")
	if host == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST not set: no docker engine to run sandboxes on (make test starts one)")
	}
	rt := engineRuntime(t, host)

	// cold: the job's own sandbox; warm: one it claimed from the pool,
	// whose claim the restarted server must find again.
	for start, extra := range map[string][]string{"cold": nil, "warm": {"--pool-headless", "1"}} {
		t.Run("same key "+start, func(t *testing.T) {
			t.Parallel()
			recoverWithSecret(t, rt, host, start, extra)
		})
	}

	t.Run("changed key", func(t *testing.T) {
		t.Parallel()
		s := currentImageServer(t, host)
		node := s.node
		s.start()
		value := newSecretValue("rekeyed")
		id := scheduleSecretJob(t, s, value, "[fake:steps=1] [fake:delay=0s] [fake:hang]")
		waitObservations(t, s, id, 1, 2*time.Minute)
		sb := jobSandbox(t, rt, node, id)
		s.kill()

		key := make([]byte, 32)
		rand.Read(key)
		other := filepath.Join(t.TempDir(), "other.key")
		if err := os.WriteFile(other, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s.args = append(s.args, "--secrets-key-file", other)
		// The key is not the one the store's secrets are sealed with: the
		// server refuses to start, naming the way out, and the job waits.
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		out, err := exec.CommandContext(ctx, binary, s.args...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), "--secrets-key-reset") || strings.Contains(string(out), value) {
			t.Fatalf("start with another key: %v; want a refusal naming --secrets-key-reset, without the value:\n%s", err, out)
		}
		if sealed := sealedSecrets(t, s.dataDir, id); sealed == nil {
			t.Fatal("the refused start erased the job's sealed secrets")
		}
		// Adopting the new key on purpose fails the job that cannot be
		// opened under it.
		s.args = append(s.args, "--secrets-key-reset")
		s.start()
		j, _ := s.waitTerminal(id, time.Minute)
		if j.Status != drydock.StatusError || !strings.Contains(j.Error, "--secrets-key-file") {
			t.Errorf("job ended %s: %q; want an error naming --secrets-key-file", j.Status, j.Error)
		}
		if sealed := sealedSecrets(t, s.dataDir, id); sealed != nil {
			t.Errorf("the store still holds %d sealed bytes of the failed job's secrets", len(sealed))
		}
		// The sandbox holds the value in its toolboxd and processes, and
		// nothing can archive it masked: it must go with the job.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			_, err := rt.Get(t.Context(), sb.ID)
			if drydock.ErrorCode(err) == drydock.ENOTFOUND {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the failed job's sandbox %s is still there 30s after it failed: %v", sb.ID, err)
			}
		}
		// The server still serves, and runs new jobs with secrets under
		// its own key.
		code, _ := s.do("GET", "/readyz", "", "")
		if code != 200 {
			t.Errorf("readyz after the failed recovery: %d", code)
		}
		select {
		case err := <-s.done:
			t.Fatalf("the server exited: %v", err)
		default:
		}
		next := newSecretValue("after")
		id2 := scheduleSecretJob(t, s, next, "[fake:steps=1] [fake:delay=0s]")
		if j, _ := s.waitTerminal(id2, 2*time.Minute); j.Status != drydock.StatusComplete {
			t.Errorf("a new job with a secret under the new key ended %s: %s", j.Status, j.Error)
		}
		eventsMasked(t, s, id, value)
		eventsMasked(t, s, id2, next)
		for _, v := range []string{value, next} {
			if strings.Contains(s.logs.String(), v) {
				t.Error("the server's log holds a value")
			}
		}
	})
}

// recoverWithSecret runs a job with a secret on a server that is killed
// while it runs and started again (see TestSecretsRecovery); start names
// how the job got its sandbox, which extra (server flags) decides.
func recoverWithSecret(t *testing.T, rt *docker.Runtime, host, start string, extra []string) {
	// Without a follow-up window the secrets go when the job ends, which
	// the end of this test checks (with one, the runner's tests check
	// they are kept and then erased).
	s := currentImageServer(t, host, append([]string{"--follow-up-secrets", "0"}, extra...)...)
	node := s.node
	s.start()
	if start == "warm" {
		waitIdle(t, s, 1)
	}
	value := newSecretValue("recovered")
	// Three steps, 3s apart: the kill lands between the first and the
	// second, which the recovered server's agent then emits.
	id := scheduleSecretJob(t, s, value, "[fake:steps=3] [fake:delay=3s] [fake:hang]")
	waitObservations(t, s, id, 1, 2*time.Minute)
	if n := metric(t, s, "drydock_sandbox_starts_total", `start="`+start+`"`); n != 1 {
		t.Fatalf("%s starts = %v; want 1", start, n)
	}
	if len(sealedSecrets(t, s.dataDir, id)) == 0 {
		t.Fatal("the store holds no sealed secrets for the running job; the check after its end proves nothing")
	}
	s.kill()
	// Take the variables away while no server runs, as a toolboxd
	// that lost them would be: only the recovered runner's giving
	// them again can bring them back.
	sb := jobSandbox(t, rt, node, id)
	tb := toolbox.New(sb.Endpoint, sb.Token)
	defer tb.Close()
	if _, err := tb.SetEnv(t.Context(), map[string]string{}); err != nil {
		t.Fatalf("clear the sandbox's job variables: %v", err)
	}
	probeEnv(t, tb, false, true).check(t, "the sandbox with its variables cleared", unset, value)
	s.start()
	waitObservations(t, s, id, 3, 2*time.Minute)
	resumed := false
	for _, ev := range s.events(id) {
		resumed = resumed || bytes.Contains(ev.Data, []byte("(attempt 2)"))
	}
	if !resumed {
		t.Fatal("the job's events do not show it resumed (attempt 2)")
	}
	if !strings.Contains(s.logs.String(), "secrets set in the sandbox") {
		t.Error("the restarted server's log does not show the secrets given to the reattached sandbox")
	}
	probeEnv(t, tb, false, true).check(t, "the recovered job's sandbox", value, "")

	if j := endJob(t, s, id); j.Status != drydock.StatusCancelled {
		t.Errorf("job ended %s: %s", j.Status, j.Error)
	}
	if sealed := sealedSecrets(t, s.dataDir, id); sealed != nil {
		t.Errorf("the store still holds %d sealed bytes of the ended job's secrets", len(sealed))
	}
	eventsMasked(t, s, id, value)
	if strings.Contains(s.logs.String(), value) {
		t.Error("the server's log holds the value")
	}
}
