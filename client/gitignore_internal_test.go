package client

import (
	"strings"
	"testing"
)

// TestGitignorePatterns: gitignore(5)'s rules, one pattern at a time.
func TestGitignorePatterns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, path string
		dir, want     bool
	}{
		{"*.log", "a.log", false, true},
		{"*.log", "deep/down/a.log", false, true},
		{"*.log", "a.log.txt", false, false},
		{"/build", "build", true, true},
		{"/build", "src/build", true, false},
		{"build/", "src/build", true, true},
		{"build/", "build", false, false}, // a file named build
		{"doc/*.txt", "doc/a.txt", false, true},
		{"doc/*.txt", "doc/sub/a.txt", false, false},
		{"doc/*.txt", "x/doc/a.txt", false, false}, // a slash in the middle anchors
		{"**/foo", "foo", false, true},
		{"**/foo", "a/b/foo", false, true},
		{"**/foo/bar", "x/foo/bar", false, true},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**", "a/x/y", false, true},
		{"a/**", "a", true, false},
		{"a**b", "a/b", false, false}, // not a whole component: like *
		{"a**b", "axxb", false, true},
		{"file?.txt", "file1.txt", false, true},
		{"file?.txt", "file/.txt", false, false},
		{"*.[oa]", "x.o", false, true},
		{"*.[!oa]", "x.o", false, false},
		{"*.[!oa]", "x.c", false, true},
		{"[]]x", "]x", false, true},
		{"[unclosed", "[unclosed", false, true},
		{`\#notcomment`, "#notcomment", false, true},
		{`\!bang`, "!bang", false, true},
		{`trailing\ `, "trailing ", false, true},
		{"trailing   ", "trailing", false, true},
		{"# comment", "# comment", false, false},
		{"a.(b)+$", "a.(b)+$", false, true}, // regexp characters are literal
	} {
		rule, ok := parseIgnoreLine(tc.pattern)
		got := ok && (!rule.dirOnly || tc.dir) && rule.re.MatchString(tc.path)
		if got != tc.want {
			t.Errorf("pattern %q on %q (dir %v) = %v; want %v (regexp %v)", tc.pattern, tc.path, tc.dir, got, tc.want, rule.re)
		}
	}
}

// FuzzGitignore: a .gitignore from any repository parses and matches
// without a panic.
func FuzzGitignore(f *testing.F) {
	for _, s := range []string{"*.log\n!keep.log\n", "[", "\\", "**", "a/**/", "[!]", "[\\]]", "/**/", "\\ \\ "} {
		f.Add(s, "a/b.log")
	}
	f.Fuzz(func(t *testing.T, file, p string) {
		rs := parseGitignore("", strings.NewReader(file))
		ignored([]ignoreRules{rs}, p, false)
		ignored([]ignoreRules{rs}, p, true)
	})
}
