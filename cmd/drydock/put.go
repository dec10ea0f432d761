package main

import (
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// maxPutBytes bounds what drydock put reads: the server's body limit (1 MiB
// by default, configurable) refuses far less, with its own message.
const maxPutBytes = 64 << 20

// PutCmd writes a file into a sandbox held for its caller (a job scheduled
// with --agent none).
type PutCmd struct {
	ID   string `arg:"" name:"job" help:"A running job scheduled with --agent none."`
	Path string `arg:"" help:"Where in the workspace, relative to its root (parent directories are created; an existing file is replaced)."`
	File string `arg:"" optional:"" help:"The local file to send (UTF-8 text); - or none reads standard input."`
	JSON bool   `name:"json" help:"Print the result as JSON."`
}

func (c *PutCmd) Run(g *Globals) error {
	name, in := "standard input", g.in()
	if c.File != "" && c.File != "-" {
		f, err := os.Open(c.File)
		if err != nil {
			return err
		}
		defer f.Close()
		name, in = safe(c.File), f
	}
	b, err := io.ReadAll(io.LimitReader(in, maxPutBytes+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > maxPutBytes {
		return fmt.Errorf("%s is larger than %d MiB: pack big or many files into an archive and schedule with --workspace", name, maxPutBytes>>20)
	}
	if !utf8.Valid(b) {
		return fmt.Errorf("%s is not UTF-8 text: the API writes text files only (send binary files as a --workspace archive when you schedule)", name)
	}
	ctx, _, stop := g.signalContext()
	defer stop()
	w, err := g.Client().WriteFile(ctx, c.ID, c.Path, string(b))
	if err != nil {
		return g.explain(err, c.ID)
	}
	if c.JSON {
		return writeJSON(g.out(), w)
	}
	_, err = fmt.Fprintf(g.out(), "Wrote %s (%d bytes) in job %s.\n", safe(w.Path), w.Size, safe(w.JobID))
	return err
}
