package image

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Suite is the Debian release the image is built from.
const Suite = "bookworm"

// The image takes its packages from the suite's main, updates and security
// archives, so that it gets the fixes an `apt-get upgrade` would.
var imageSuites = []string{Suite, Suite + "-updates", Suite + "-security"}

// HostMirrors reads the apt sources of the machine whose root is root ("/"
// for this one) and returns, as mmdebstrap's one-line sources, every
// archive of the image's suites that the machine uses: the mirrors it is
// configured to reach (a company mirror, a snapshot, a proxy), whose names
// are the machine's business and not the code's. It reads
// etc/apt/sources.list and the *.list and deb822 *.sources files of
// etc/apt/sources.list.d, and keeps "deb" entries with the main component.
func HostMirrors(root string) ([]string, error) {
	dir := filepath.Join(root, "etc", "apt")
	files := []string{filepath.Join(dir, "sources.list")}
	more, _ := filepath.Glob(filepath.Join(dir, "sources.list.d", "*"))
	sort.Strings(more)
	files = append(files, more...)
	var entries []aptEntry
	for _, f := range files {
		data, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read apt sources: %w", err)
		}
		switch {
		case strings.HasSuffix(f, ".sources"):
			entries = append(entries, parseDeb822(data)...)
		case strings.HasSuffix(f, ".list") || f == files[0]:
			entries = append(entries, parseOneLine(data)...)
		}
	}
	var mirrors []string
	for _, suite := range imageSuites {
		for _, e := range entries {
			if !slices.Contains(e.types, "deb") || !slices.Contains(e.components, "main") {
				continue
			}
			for _, s := range e.suites {
				if s != suite {
					continue
				}
				for _, u := range e.uris {
					line := fmt.Sprintf("deb %s %s main", u, suite)
					if !slices.Contains(mirrors, line) {
						mirrors = append(mirrors, line)
					}
				}
			}
		}
	}
	if !slices.ContainsFunc(mirrors, func(m string) bool { return strings.HasSuffix(m, " "+Suite+" main") }) {
		return nil, fmt.Errorf("this machine's apt sources (%s) name no Debian %s archive with the main component, from which the image is built; add one, or give the archives with --mirror (e.g. --mirror 'deb http://mirror.example.com/debian %s main')", dir, Suite, Suite)
	}
	return mirrors, nil
}

// aptEntry is one source: its types, URIs, suites and components.
type aptEntry struct {
	types, uris, suites, components []string
}

// parseOneLine reads the classic format: "deb [options] uri suite
// component...".
func parseOneLine(data []byte) []aptEntry {
	var out []aptEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(f[1], "[") {
			// Options, possibly with spaces: up to the closing bracket.
			end := slices.IndexFunc(f[1:], func(s string) bool { return strings.HasSuffix(s, "]") })
			if end < 0 {
				continue
			}
			f = append(f[:1], f[end+2:]...)
		}
		if len(f) < 4 {
			continue
		}
		out = append(out, aptEntry{types: f[:1], uris: f[1:2], suites: f[2:3], components: f[3:]})
	}
	return out
}

// parseDeb822 reads the deb822 format: stanzas of "Field: value" lines,
// separated by blank lines; "Enabled: no" turns a stanza off.
func parseDeb822(data []byte) []aptEntry {
	var out []aptEntry
	for _, stanza := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n\n") {
		var e aptEntry
		enabled := true
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(line, "#") || strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
				continue // comments, and continuation lines (only Signed-By has them)
			}
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			vals := strings.Fields(v)
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "types":
				e.types = vals
			case "uris":
				e.uris = vals
			case "suites":
				e.suites = vals
			case "components":
				e.components = vals
			case "enabled":
				enabled = !strings.EqualFold(strings.TrimSpace(v), "no")
			}
		}
		if enabled && len(e.uris) > 0 {
			out = append(out, e)
		}
	}
	return out
}
