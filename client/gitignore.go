package client

import (
	"bufio"
	"io"
	"regexp"
	"strings"
)

// ignoreRules are the patterns of one .gitignore file, in order, with the
// directory (relative to the packed root, "" for the root) they apply in.
// The syntax is gitignore(5)'s: comments, blank lines, trailing spaces,
// "!" negation, "\" escapes, a "/" at the start or in the middle anchoring
// a pattern to the file's directory, a trailing "/" for directories only,
// "*", "?", "[...]" within one name, and "**" across directories. It is
// written here rather than taken from a module: the few Go libraries are
// unmaintained or come with a whole git implementation.
type ignoreRules struct {
	dir   string
	rules []ignoreRule
}

type ignoreRule struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

func parseGitignore(dir string, r io.Reader) ignoreRules {
	rs := ignoreRules{dir: dir}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if rule, ok := parseIgnoreLine(sc.Text()); ok {
			rs.rules = append(rs.rules, rule)
		}
	}
	return rs
}

func parseIgnoreLine(line string) (ignoreRule, bool) {
	line = strings.TrimSuffix(line, "\r")
	if line == "" || line[0] == '#' {
		return ignoreRule{}, false
	}
	// Trailing spaces go unless escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
		line = line[:len(line)-1]
	}
	var r ignoreRule
	switch {
	case strings.HasPrefix(line, "!"):
		r.negate, line = true, line[1:]
	case strings.HasPrefix(line, `\!`), strings.HasPrefix(line, `\#`):
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if line == "" {
		return ignoreRule{}, false
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	expr := globRegexp(line)
	if anchored {
		expr = "^" + expr + "$"
	} else {
		expr = "^(?:.*/)?" + expr + "$"
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return ignoreRule{}, false // git ignores what it cannot read, too
	}
	r.re = re
	return r, true
}

// globRegexp translates a gitignore glob to a regular expression.
func globRegexp(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case c == '*' && strings.HasPrefix(g[i:], "**") && (i == 0 || g[i-1] == '/') && (i+2 == len(g) || g[i+2] == '/'):
			// "**" as a whole component: any number of directories.
			switch {
			case i+2 == len(g): // "a/**": everything inside
				b.WriteString(".*")
			default: // "**/a" or "a/**/b": zero or more directories
				b.WriteString("(?:.*/)?")
				i++ // the slash after it is part of the group
			}
			i++
		case c == '*':
			for i+1 < len(g) && g[i+1] == '*' {
				i++
			}
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '\\' && i+1 < len(g):
			i++
			b.WriteString(regexp.QuoteMeta(g[i : i+1]))
		case c == '[':
			end := strings.IndexByte(g[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := g[i+1 : i+1+end]
			if end == 0 { // "[]...]": a ']' first is literal
				if e2 := strings.IndexByte(g[i+2:], ']'); e2 >= 0 {
					class, end = g[i+1:i+2+e2], e2+1
				}
			}
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// ignored reports whether rel (slash-separated, relative to the packed
// root) is ignored by the rule sets that apply to it, given from the root
// down: the last pattern that matches decides, and a deeper file's
// patterns come after its parents'.
func ignored(sets []ignoreRules, rel string, isDir bool) bool {
	out := false
	for _, s := range sets {
		sub := rel
		if s.dir != "" {
			if !strings.HasPrefix(rel, s.dir+"/") {
				continue
			}
			sub = rel[len(s.dir)+1:]
		}
		for _, r := range s.rules {
			if r.dirOnly && !isDir {
				continue
			}
			if r.re.MatchString(sub) {
				out = !r.negate
			}
		}
	}
	return out
}
