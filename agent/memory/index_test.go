package memory_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/agent/memory"
	"github.com/google/go-cmp/cmp"
)

func labels(hits []memory.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Label)
	}
	return out
}

func TestSearchRanksRareTermsHigher(t *testing.T) {
	t.Parallel()
	ix := memory.NewIndex()
	for i := range 20 {
		ix.Add(fmt.Sprint(i), fmt.Sprintf("step %d", i), "the build ran the tests")
	}
	ix.Add("rare", "rare", "the build failed: segfault in libfoo")
	hits := ix.Search("build segfault", 3)
	if len(hits) != 3 || hits[0].Label != "rare" {
		t.Fatalf("hits %v", labels(hits))
	}
	// Ties go to the latest.
	if hits[1].Label != "step 19" || hits[2].Label != "step 18" {
		t.Errorf("ties %v, want the latest first", labels(hits))
	}
	if got := ix.Search("kubernetes", 3); len(got) != 0 {
		t.Errorf("unrelated query found %v", labels(got))
	}
	if got := ix.Search("  ", 3); len(got) != 0 {
		t.Errorf("empty query found %v", labels(got))
	}
}

func TestLongTextsAreSplitIntoPassages(t *testing.T) {
	t.Parallel()
	ix := memory.NewIndex()
	var sb strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&sb, "line %d of the build log\n", i)
		if i == 200 {
			sb.WriteString("error: undefined reference to `frobnicate'\n")
		}
	}
	ix.Add("log", "step 3, bash result", sb.String())
	ix.Add("long", "step 4, bash result", strings.Repeat("x", 2500)+" needle")
	hits := ix.Search("frobnicate", 5)
	if len(hits) != 1 {
		t.Fatalf("hits %v", labels(hits))
	}
	h := hits[0]
	if !strings.Contains(h.Text, "undefined reference to `frobnicate'") || len(h.Text) > memory.PassageBytes {
		t.Errorf("passage of %d bytes: %q", len(h.Text), h.Text)
	}
	// Line 201 is the error line; the label says which lines the passage holds.
	var first, last int
	if _, err := fmt.Sscanf(h.Label, "step 3, bash result, lines %d-%d", &first, &last); err != nil || first > 201 || last < 201 {
		t.Errorf("label %q", h.Label)
	}
	lines := strings.Split(sb.String(), "\n")
	if got := strings.Split(h.Text, "\n"); got[0] != lines[first-1] || got[len(got)-1] != lines[last-1] {
		t.Errorf("passage %q... does not hold lines %d-%d", got[0], first, last)
	}
	hits = ix.Search("needle", 5)
	if len(hits) != 1 || hits[0].Label != "step 4, bash result, line 1" || !strings.HasSuffix(hits[0].Text, " needle") {
		t.Errorf("a long line's last piece: %v", hits)
	}
}

func TestAddReplacesAKey(t *testing.T) {
	t.Parallel()
	ix := memory.NewIndex()
	ix.Add("f", "file", "old content alpha")
	ix.Add("g", "other", "beta")
	ix.Add("f", "file", "new content gamma")
	if got := ix.Search("alpha", 5); len(got) != 0 {
		t.Errorf("replaced text still found: %v", labels(got))
	}
	if got := labels(ix.Search("gamma content", 5)); !cmp.Equal(got, []string{"file"}) {
		t.Errorf("hits %v", got)
	}
	if ix.Len() != 2 || !ix.Has("f") || ix.Has("h") {
		t.Errorf("len %d", ix.Len())
	}
}

func TestTerms(t *testing.T) {
	t.Parallel()
	got := memory.Terms("Error in src/parser_v2.ts:14 — ValueError('x')")
	want := []string{"error", "in", "src", "parser", "v2", "ts", "14", "valueerror", "x"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("terms (-want +got):\n%s", diff)
	}
}

func TestFormatFitsTheLimit(t *testing.T) {
	t.Parallel()
	hits := []memory.Hit{
		{Label: "step 2, bash result", Text: strings.Repeat("a", 900)},
		{Label: "step 1, bash result", Text: strings.Repeat("b", 900)},
	}
	out := memory.Format("q", hits, 10, 1200)
	if len(out) > 1200 || !strings.HasPrefix(out, "The best 1 of 10 passages") || !strings.Contains(out, "--- step 2, bash result ---") || strings.Contains(out, "step 1") {
		t.Errorf("%d bytes:\n%s", len(out), out)
	}
	out = memory.Format("q", hits, 10, 300)
	if len(out) > 400 || !strings.Contains(out, "step 2") || !strings.HasSuffix(out, "[...]") {
		t.Errorf("the best hit is cut, not dropped: %d bytes:\n%s", len(out), out)
	}
	if out := memory.Format("q", hits, 10, 0); !strings.Contains(out, "The best 2 of 10") {
		t.Errorf("no limit:\n%s", out)
	}
	if out := memory.Format("zebra", nil, 10, 0); out != `Nothing in the job's history (10 passages) matches "zebra".` {
		t.Errorf("no hits: %s", out)
	}
}
