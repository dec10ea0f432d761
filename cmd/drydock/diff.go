package main

import (
	"bufio"
	"bytes"
	"fmt"
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
	// The patch is the sandbox's text: every line is escaped before it is
	// coloured, so a file's contents cannot drive the terminal.
	color := g.colorful(out)
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
