package api_test

import (
	"bytes"
	"crypto/rand"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// diffWorkspace is a live sandbox over a fresh directory whose starting
// point is recorded after seed has filled it.
func diffWorkspace(t *testing.T, id string, seed map[string]string) (string, *drydock.Sandbox) {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range seed {
		writeFile(t, filepath.Join(ws, name), body)
	}
	sb := startToolbox(t, id, ws, nil)
	if _, err := toolbox.New(sb.Endpoint, sb.Token).Baseline(t.Context()); err != nil {
		t.Fatalf("baseline: %v", err)
	}
	return ws, sb
}

func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiffOfAnEmptyStartAddsEverything(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	ws, sb := diffWorkspace(t, "sb-diff-empty", nil)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, sb)
	writeFile(t, filepath.Join(ws, "src", "app.js"), "console.log(1)\n")
	writeFile(t, filepath.Join(ws, "README.md"), "hello\n")

	resp, data := b.get(t, "/v1/jobs/"+j.ID+"/diff", b.alice)
	if resp.StatusCode != 200 {
		t.Fatalf("diff: %d %s", resp.StatusCode, data)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/x-diff; charset=utf-8" {
		t.Errorf("content type %q", ct)
	}
	got := string(data)
	for _, want := range []string{
		"diff --git a/README.md b/README.md\nnew file mode 100644\n",
		"+hello\n",
		"diff --git a/src/app.js b/src/app.js\nnew file mode 100644\n",
		"+console.log(1)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
}

func TestDiffShowsChangedDeletedRenamedAndBinaryFiles(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	long := strings.Repeat("a line that stays the same\n", 20)
	ws, sb := diffWorkspace(t, "sb-diff-kinds", map[string]string{
		"changed.txt": "one\ntwo\n",
		"gone.txt":    "bye\n",
		"old/name.md": long,
		".gitignore":  "node_modules/\n",
	})
	j := b.runningJob(t, b.alice, `{"task": "x"}`, sb)
	writeFile(t, filepath.Join(ws, "changed.txt"), "one\nTWO\n")
	if err := os.Remove(filepath.Join(ws, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(ws, "old"), filepath.Join(ws, "new")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "logo.bin"), "\x00\x01\x02binary\x00")
	writeFile(t, filepath.Join(ws, "node_modules", "dep", "index.js"), "ignored\n")
	if err := os.Symlink("/etc/passwd", filepath.Join(ws, "passwd")); err != nil {
		t.Fatal(err)
	}

	resp, data := b.get(t, "/v1/jobs/"+j.ID+"/diff", b.alice)
	if resp.StatusCode != 200 {
		t.Fatalf("diff: %d %s", resp.StatusCode, data)
	}
	got := string(data)
	for _, want := range []string{
		"diff --git a/changed.txt b/changed.txt\n",
		"-two\n+TWO\n",
		"diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n",
		"diff --git a/old/name.md b/new/name.md\nsimilarity index 100%\nrename from old/name.md\nrename to new/name.md\n",
		"diff --git a/logo.bin b/logo.bin\nnew file mode 100644\n",
		"GIT binary patch\n",
		// A link is its target, never what it points to.
		"diff --git a/passwd b/passwd\nnew file mode 120000\n",
		"+/etc/passwd\n\\ No newline at end of file\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "root:") {
		t.Errorf("the diff followed a link out of the workspace:\n%s", got)
	}
	if strings.Contains(got, "a/node_modules") {
		t.Errorf("the workspace's .gitignore is not honoured:\n%s", got)
	}
	// What the rules leave out is named before the first file, which git
	// apply skips below.
	if !strings.HasPrefix(got, drydock.DiffIgnoredMarker+"node_modules/\ndiff --git ") {
		t.Errorf("the diff does not name the ignored node_modules/ first:\n%s", got)
	}
	// The diff is a patch: applied to the start, it gives the end.
	start := t.TempDir()
	for name, body := range map[string]string{"changed.txt": "one\ntwo\n", "gone.txt": "bye\n", "old/name.md": long, ".gitignore": "node_modules/\n"} {
		writeFile(t, filepath.Join(start, name), body)
	}
	apply := exec.Command("git", "apply", "--binary", "-")
	apply.Dir, apply.Stdin = start, bytes.NewReader(data)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	for name, want := range map[string]string{"changed.txt": "one\nTWO\n", "new/name.md": long, "logo.bin": "\x00\x01\x02binary\x00"} {
		if b, err := os.ReadFile(filepath.Join(start, name)); err != nil || string(b) != want {
			t.Errorf("%s after applying the diff: %q %v", name, b, err)
		}
	}
	for _, name := range []string{"gone.txt", "old/name.md"} {
		if _, err := os.Stat(filepath.Join(start, name)); !os.IsNotExist(err) {
			t.Errorf("%s is still there after applying the diff: %v", name, err)
		}
	}

	// Once the job ends, the stored diff answers (the runner stores it
	// beside the archive).
	if _, err := b.artifacts.Put(t.Context(), drydock.DiffArtifactKey(j.ID), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	b.finish(t, j.ID, drydock.StatusComplete, tarGz(t, nil))
	resp, stored := b.get(t, "/v1/jobs/"+j.ID+"/diff", b.alice)
	if resp.StatusCode != 200 || !bytes.Equal(stored, data) {
		t.Errorf("stored diff: %d %q", resp.StatusCode, stored)
	}
	if resp, _ := b.get(t, "/v1/jobs/"+j.ID+"/diff", b.bob); resp.StatusCode != 404 {
		t.Errorf("another user's job's diff: %d", resp.StatusCode)
	}
}

func TestDiffBeforeAndWithoutAStart(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	// A sandbox whose baseline was never recorded.
	sb := startToolbox(t, "sb-diff-none", t.TempDir(), nil)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, sb)
	pending := b.create(t, b.alice, `{"task": "x"}`)
	if resp, data := b.get(t, "/v1/jobs/"+pending.ID+"/diff", b.alice); resp.StatusCode != 409 || errorCode(t, data) != "conflict" {
		t.Errorf("pending: %d %s", resp.StatusCode, data)
	}
	if resp, data := b.get(t, "/v1/jobs/"+j.ID+"/diff", b.alice); resp.StatusCode != 409 || !strings.Contains(string(data), "starting point") {
		t.Errorf("no baseline: %d %s", resp.StatusCode, data)
	}
	// Ended with an archive but no stored diff.
	b.finish(t, j.ID, drydock.StatusComplete, tarGz(t, nil))
	if resp, data := b.get(t, "/v1/jobs/"+j.ID+"/diff", b.alice); resp.StatusCode != 404 || !strings.Contains(string(data), "no stored diff") {
		t.Errorf("no stored diff: %d %s", resp.StatusCode, data)
	}
	if resp, data := b.get(t, "/v1/jobs/"+j.ID+"/diff?x=1", b.alice); resp.StatusCode != 400 {
		t.Errorf("query: %d %s", resp.StatusCode, data)
	}
}

// A running job's diff is computed from its sandbox, where files hold the
// plain values: the API masks them (same length), and leaves binary
// contents out, since no mask finds a value inside a binary patch.
func TestLiveDiffMasksSecrets(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, withSecrets(newBox(t)))
	ws, sb := diffWorkspace(t, "sb-diff-secret", nil)
	j := b.runningJob(t, b.alice, `{"task": "x", "secrets": {"GITHUB_TOKEN": "`+apiCanary+`"}}`, sb)
	writeFile(t, filepath.Join(ws, "env.txt"), "GITHUB_TOKEN="+apiCanary+"\n")
	writeFile(t, filepath.Join(ws, "x-"+apiCanary), "named\n")
	writeFile(t, filepath.Join(ws, "blob.bin"), "\x00\x01"+apiCanary+"\x00")

	resp, data := b.get(t, "/v1/jobs/"+j.ID+"/diff", b.alice)
	stars := strings.Repeat("*", len(apiCanary))
	if resp.StatusCode != 200 || bytes.Contains(data, []byte(apiCanary)) {
		t.Fatalf("diff: %d %s", resp.StatusCode, data)
	}
	for _, want := range []string{"+GITHUB_TOKEN=" + stars + "\n", "+++ b/x-" + stars + "\n", "Binary files /dev/null and b/blob.bin differ\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("diff lacks %q:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), "GIT binary patch") {
		t.Errorf("a job with secrets got a binary patch:\n%s", data)
	}
}

// A diff larger than the limit is cut at a line end and says so, in its
// last line and in a header; git is stopped rather than read to the end.
func TestHugeDiffIsCutWithAMarker(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	ws, sb := diffWorkspace(t, "sb-diff-huge", nil)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, sb)
	line := strings.Repeat("generated ", 10) + "\n"
	writeFile(t, filepath.Join(ws, "big.txt"), strings.Repeat(line, 3*toolbox.MaxDiffBytes/len(line)))

	resp, data := b.get(t, "/v1/jobs/"+j.ID+"/diff", b.alice)
	if resp.StatusCode != 200 || len(data) > toolbox.MaxDiffBytes || resp.Header.Get("Drydock-Diff-Truncated") != "true" {
		t.Fatalf("huge diff: %d, %d bytes, truncated header %q", resp.StatusCode, len(data), resp.Header.Get("Drydock-Diff-Truncated"))
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, toolbox.DiffTruncatedMarker) {
		t.Errorf("last line %q", last)
	}
	if prev := lines[len(lines)-2]; prev != "+"+strings.TrimSuffix(line, "\n") {
		t.Errorf("the cut is not at a line end: %q", prev)
	}
	// Stored, it is recognised as cut too.
	if _, err := b.artifacts.Put(t.Context(), drydock.DiffArtifactKey(j.ID), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	b.finish(t, j.ID, drydock.StatusComplete, tarGz(t, nil))
	if resp, _ := b.get(t, "/v1/jobs/"+j.ID+"/diff", b.alice); resp.StatusCode != 200 || resp.Header.Get("Drydock-Diff-Truncated") != "true" {
		t.Errorf("stored cut diff: %d %q", resp.StatusCode, resp.Header.Get("Drydock-Diff-Truncated"))
	}
}

// A workspace that is a git repository (a cloned project) keeps its own
// .git untouched: the diff's git directory is elsewhere, the repository's
// metadata is not part of the diff, and its index and history stay as
// they were.
func TestDiffLeavesTheUsersRepositoryAlone(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	ws := filepath.Join(t.TempDir(), "ws")
	writeFile(t, filepath.Join(ws, "main.go"), "package main\n")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@example.com"}, args...)...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "first")
	head := git("rev-parse", "HEAD")
	sb := startToolbox(t, "sb-diff-repo", ws, nil)
	if _, err := toolbox.New(sb.Endpoint, sb.Token).Baseline(t.Context()); err != nil {
		t.Fatal(err)
	}
	j := b.runningJob(t, b.alice, `{"task": "x"}`, sb)
	writeFile(t, filepath.Join(ws, "main.go"), "package main\n\nfunc main() {}\n")

	resp, data := b.get(t, "/v1/jobs/"+j.ID+"/diff", b.alice)
	if resp.StatusCode != 200 || !strings.Contains(string(data), "+func main() {}\n") || strings.Contains(string(data), ".git/") {
		t.Fatalf("diff: %d %s", resp.StatusCode, data)
	}
	if got := git("rev-parse", "HEAD"); got != head {
		t.Errorf("the repository's HEAD moved: %s → %s", head, got)
	}
	if st := git("status", "--porcelain"); st != " M main.go\n" {
		t.Errorf("the repository's status: %q (its index was touched?)", st)
	}
}

// Diffing stores nothing of the final workspace in the diff's git
// directory (in a sandbox, its home: memory): a large new file is read, not
// copied.
func TestDiffCopiesNoNewFileIntoItsGitDirectory(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	ws, sb := diffWorkspace(t, "sb-diff-space", nil)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, sb)
	noise := make([]byte, 4<<20)
	rand.Read(noise)
	writeFile(t, filepath.Join(ws, "data.bin"), string(noise))

	if resp, data := b.get(t, "/v1/jobs/"+j.ID+"/diff", b.alice); resp.StatusCode != 200 || !strings.Contains(string(data), "diff --git a/data.bin b/data.bin\nnew file mode") {
		t.Fatalf("diff: %d %.300s", resp.StatusCode, data)
	}
	var size int64
	filepath.WalkDir(filepath.Join(filepath.Dir(ws), ".drydock-diff.git"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	if size == 0 || size > 1<<20 {
		t.Errorf("the diff's git directory holds %d bytes after diffing a 4 MiB new file", size)
	}
}
