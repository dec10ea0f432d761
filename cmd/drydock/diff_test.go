package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

const samplePatch = "diff --git a/app.js b/app.js\n" +
	"index 1111111..2222222 100644\n" +
	"--- a/app.js\n" +
	"+++ b/app.js\n" +
	"@@ -1 +1 @@\n" +
	"-old\n" +
	"+new \x1b]0;pwned\x07\x1b[2J\r\n" +
	" same\n"

func TestDiffCommandEscapesAndColoursLikeGit(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "t"}, time.Now())
	srv.SetDiff(j.ID, []byte(samplePatch))

	r := newRun()
	if err := r.exec("diff", j.ID); err != nil {
		t.Fatal(err)
	}
	got := r.out.String()
	if strings.ContainsAny(got, "\x1b\x07\r") {
		t.Errorf("a control character from the workspace reached the terminal: %q", got)
	}
	mustContain(t, "plain diff", got, "--- a/app.js\n+++ b/app.js\n@@ -1 +1 @@\n-old\n+new ^[]0;pwned^G^[[2J^M\n same\n")

	r = newRun()
	r.color = true
	if err := r.exec("diff", j.ID); err != nil {
		t.Fatal(err)
	}
	got = r.out.String()
	mustContain(t, "coloured diff", got,
		"\x1b[1mdiff --git a/app.js b/app.js\x1b[0m\n",
		"\x1b[1m+++ b/app.js\x1b[0m\n", // a header, not an added line
		"\x1b[36m@@ -1 +1 @@\x1b[0m\n",
		"\x1b[31m-old\x1b[0m\n",
		"\x1b[32m+new ^[]0;pwned^G^[[2J^M\x1b[0m\n",
		"\n same\n")
}

func TestDiffCommandSavesThePatchExactly(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "t"}, time.Now())
	srv.SetDiff(j.ID, []byte(samplePatch))
	out := filepath.Join(t.TempDir(), "change.patch")

	if err := newRun().exec("diff", j.ID, "-o", out); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != samplePatch {
		t.Errorf("saved patch %q, %v", got, err)
	}
	if err := newRun().exec("diff", j.ID, "-o", out); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("overwrite without --force: %v", err)
	}
	if err := newRun().exec("diff", j.ID, "-o", out, "--force"); err != nil {
		t.Errorf("--force: %v", err)
	}
}

func TestDiffCommandBeforeTheJobHasOne(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "t"}, time.Now())
	err := newRun().exec("diff", j.ID)
	if err == nil || !strings.Contains(err.Error(), "has not started yet") {
		t.Errorf("error = %v", err)
	}
	empty := srv.AddJob(drydock.JobSpec{Task: "t"}, time.Now())
	srv.SetDiff(empty.ID, []byte{})
	r := newRun()
	if err := r.exec("diff", empty.ID); err != nil || r.out.String() != "" || r.err.String() != "No changes.\n" {
		t.Errorf("empty diff: %v out %q err %q", err, r.out.String(), r.err.String())
	}
}

func TestDiffCommandStat(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "t"}, time.Now())
	patch := samplePatch +
		"diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\nindex 1..0\n--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n" +
		"diff --git a/old.md b/new.md\nsimilarity index 100%\nrename from old.md\nrename to new.md\n" +
		"diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0..1\nGIT binary patch\nliteral 5\nMcmZQzOv=my00M6TI{*Lx\n\nliteral 0\nHcmV?d00001\n\n" +
		"diff --git a/\x1b[31mred b/\x1b[31mred\nnew file mode 100644\n--- /dev/null\n+++ b/\x1b[31mred\n@@ -0,0 +1 @@\n+x\n"
	srv.SetDiff(j.ID, []byte(patch))
	r := newRun()
	if err := r.exec("diff", j.ID, "--stat"); err != nil {
		t.Fatal(err)
	}
	want := " app.js | +1 -1\n" +
		" gone.txt | +0 -2\n" +
		" new.md | +0 -0\n" +
		" logo.png | binary\n" +
		" ^[[31mred | +1 -0\n" +
		" 5 files changed, 2 insertions(+), 3 deletions(-)\n"
	if got := r.out.String(); got != want {
		t.Errorf("--stat:\n%s\nwant:\n%s", got, want)
	}
}

// What the workspace's ignore rules left out is counted after the stat,
// and printed (escaped, as every line) by the full diff.
func TestDiffCommandSaysWhatIsNotShown(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "t"}, time.Now())
	srv.SetDiff(j.ID, []byte(drydock.DiffIgnoredMarker+"node_modules/\n"+drydock.DiffIgnoredMarker+"hidden\x1b[2J/\n"+samplePatch))
	r := newRun()
	if err := r.exec("diff", j.ID, "--stat"); err != nil {
		t.Fatal(err)
	}
	if want := " 1 file changed, 1 insertion(+), 1 deletion(-)\n not shown: 2 paths ignored by .gitignore (drydock diff without --stat names them)\n"; !strings.HasSuffix(r.out.String(), want) {
		t.Errorf("--stat:\n%s\nwant it to end with:\n%s", r.out.String(), want)
	}
	r = newRun()
	if err := r.exec("diff", j.ID); err != nil {
		t.Fatal(err)
	}
	if got := r.out.String(); !strings.HasPrefix(got, drydock.DiffIgnoredMarker+"node_modules/\n"+drydock.DiffIgnoredMarker+"hidden^[[2J/\n") {
		t.Errorf("diff:\n%q", got)
	}
}
