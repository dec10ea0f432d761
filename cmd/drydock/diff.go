package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/drydockhq/drydock"
)

// DiffCmd prints a job's changes to its workspace.
type DiffCmd struct {
	ID     string `arg:"" help:"Job id."`
	Output string `short:"o" help:"Write the patch unchanged to this file (for git apply) instead of printing it."`
	Force  bool   `help:"Overwrite the output file if it exists."`
	Stat   bool   `help:"Print one line per changed file with its added and removed lines, and a total."`
}

func (c *DiffCmd) Run(g *Globals) error {
	ctx, _, stop := g.signalContext()
	defer stop()
	d, err := g.Client().Diff(ctx, c.ID)
	if err != nil {
		if drydock.ErrorCode(err) == drydock.ECONFLICT {
			return fmt.Errorf("job %s has no diff yet (%s): it appears once the job's sandbox has started", c.ID, safe(drydock.ErrorMessage(err)))
		}
		return g.explain(err, c.ID)
	}
	if c.Output != "" {
		return c.save(g, d.Patch)
	}
	out := g.out()
	if len(d.Patch) == 0 {
		_, err := fmt.Fprintln(g.errw(), "No changes.")
		return err
	}
	color := g.colorful(out)
	if c.Stat {
		return writeDiffStat(out, color, d.Patch)
	}
	// The patch is the sandbox's text: every line is escaped before it is
	// coloured, so a file's contents cannot drive the terminal.
	w := bufio.NewWriter(out)
	inHeader := false
	for line := range strings.SplitAfterSeq(string(d.Patch), "\n") {
		text := safeText(strings.TrimSuffix(line, "\n"))
		switch {
		case strings.HasPrefix(line, "diff --git "):
			inHeader = true
			text = ansi(color, bold, text)
		case strings.HasPrefix(line, "@@"):
			inHeader = false
			text = ansi(color, cyan, text)
		case inHeader:
			text = ansi(color, bold, text)
		case strings.HasPrefix(line, "+"):
			text = ansi(color, green, text)
		case strings.HasPrefix(line, "-"):
			text = ansi(color, red, text)
		}
		if line == "" {
			continue
		}
		fmt.Fprintln(w, text)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if d.Truncated {
		fmt.Fprintf(g.errw(), "The diff was cut at the server's limit; the whole workspace is in: drydock download %s\n", cmdWord(c.ID))
	}
	return nil
}

// save writes the patch byte for byte (no escaping: a file is not a
// terminal, and git apply needs it exact), never over an existing file
// without --force.
func (c *DiffCmd) save(g *Globals, patch []byte) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if c.Force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(c.Output, flags|syscall.O_NOFOLLOW, 0o644)
	if os.IsExist(err) {
		return fmt.Errorf("%s already exists: use --force to overwrite it or -o to choose another file", c.Output)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", c.Output, err)
	}
	_, err = bytes.NewReader(patch).WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", c.Output, err)
	}
	fmt.Fprintf(g.out(), "Saved the diff of %s (%s) to %s\n", safe(c.ID), bytesize(int64(len(patch))), filepath.Clean(c.Output))
	return nil
}

// fileStat is one file of a diff: its name as git's header gives it, and
// what changed.
type fileStat struct {
	name           string
	added, removed int
	binary         bool
}

// diffStat counts each file's added and removed lines in a git diff.
func diffStat(patch []byte) []fileStat {
	var files []fileStat
	inHeader := false
	for line := range strings.SplitSeq(string(patch), "\n") {
		switch {
		case strings.HasPrefix(line, "diff --git "):
			name := strings.TrimPrefix(line, "diff --git ")
			if i := strings.LastIndex(name, " b/"); i >= 0 {
				name = name[i+3:] // the name after the change; --- and +++ say it better when present
			}
			files = append(files, fileStat{name: name})
			inHeader = true
		case len(files) == 0:
		case inHeader && strings.HasPrefix(line, "@@"):
			inHeader = false
		case inHeader:
			f := &files[len(files)-1]
			switch {
			case line == "GIT binary patch", strings.HasPrefix(line, "Binary files "):
				f.binary = true
			case strings.HasPrefix(line, "--- a/"):
				f.name = strings.TrimPrefix(line, "--- a/") // a deleted file has no b/ side
			case strings.HasPrefix(line, "rename to "), strings.HasPrefix(line, "+++ b/"):
				f.name = strings.TrimPrefix(strings.TrimPrefix(line, "rename to "), "+++ b/")
			}
		case strings.HasPrefix(line, "+"):
			files[len(files)-1].added++
		case strings.HasPrefix(line, "-"):
			files[len(files)-1].removed++
		}
	}
	return files
}

func writeDiffStat(w io.Writer, color bool, patch []byte) error {
	files := diffStat(patch)
	added, removed := 0, 0
	bw := bufio.NewWriter(w)
	for _, f := range files {
		added, removed = added+f.added, removed+f.removed
		change := ansi(color, green, fmt.Sprintf("+%d", f.added)) + " " + ansi(color, red, fmt.Sprintf("-%d", f.removed))
		if f.binary {
			change = "binary"
		}
		fmt.Fprintf(bw, " %s | %s\n", safe(f.name), change)
	}
	fmt.Fprintf(bw, " %d file%s changed, %d insertion%s(+), %d deletion%s(-)\n",
		len(files), plural(len(files)), added, plural(added), removed, plural(removed))
	if n := ignoredPaths(patch); n > 0 {
		fmt.Fprintf(bw, " not shown: %d path%s ignored by .gitignore (drydock diff without --stat names them)\n", n, plural(n))
	}
	return bw.Flush()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// ignoredPaths counts the lines before the first file that name what the
// workspace's ignore rules left out of the diff.
func ignoredPaths(patch []byte) int {
	n := 0
	for line := range strings.SplitSeq(string(patch), "\n") {
		if strings.HasPrefix(line, "diff --git ") {
			break
		}
		if strings.HasPrefix(line, drydock.DiffIgnoredMarker) {
			n++
		}
	}
	return n
}
