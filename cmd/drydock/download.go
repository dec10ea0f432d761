package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/drydockhq/drydock"
)

// DownloadCmd saves a job's workspace archive.
type DownloadCmd struct {
	ID     string `arg:"" help:"Job id."`
	Output string `short:"o" help:"File to write, or - for standard output (default: <id>.tar.gz, or .zip with --format zip)."`
	Format string `help:"Archive format: tar.gz or zip (default: from -o's extension, else tar.gz)."`
	Force  bool   `help:"Overwrite the output file if it exists."`
	JSON   bool   `name:"json" help:"Print {\"path\", \"bytes\", \"format\"} as JSON when done."`
}

// resolve picks the format and the output path from the flags.
func (c *DownloadCmd) resolve() (format, path string, err error) {
	fromExt := ""
	switch lower := strings.ToLower(c.Output); {
	case strings.HasSuffix(lower, ".zip"):
		fromExt = "zip"
	case strings.HasSuffix(lower, ".tar.gz"), strings.HasSuffix(lower, ".tgz"):
		fromExt = "tar.gz"
	}
	switch c.Format {
	case "":
		format = fromExt
		if format == "" {
			format = "tar.gz"
		}
	case "zip", "tar.gz":
		format = c.Format
		if fromExt != "" && fromExt != format {
			return "", "", fmt.Errorf("-o %s names a %s file but --format is %s: change one of them", c.Output, fromExt, format)
		}
	case "tgz":
		format = "tar.gz"
	default:
		return "", "", fmt.Errorf("--format %q: use tar.gz or zip", c.Format)
	}
	path = c.Output
	if path == "" {
		// A job id is the server's, so keep only what is safe as a file name.
		path = strings.Map(func(r rune) rune {
			if r == '/' || r == '\\' || r == 0 {
				return '_'
			}
			return r
		}, c.ID) + "." + format
	}
	return format, path, nil
}

func (c *DownloadCmd) Run(g *Globals) error {
	format, path, err := c.resolve()
	if err != nil {
		return err
	}
	ctx, interrupted, stop := g.signalContext()
	defer stop()
	cl := g.Client()

	if path == "-" {
		n, err := cl.Download(ctx, c.ID, format, g.out())
		if err != nil {
			return c.explain(g, err)
		}
		fmt.Fprintf(g.errw(), "Downloaded %s (%s).\n", bytesize(n), format)
		return nil
	}

	if !c.Force {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s already exists: use --force to overwrite it or -o to choose another file", path)
		}
	}
	// Download into a temporary file next to the target and rename it at
	// the end, so an interrupted or failed download never leaves a partial
	// archive under the real name.
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.part")
	if err != nil {
		return fmt.Errorf("create the output file: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	n, err := cl.Download(ctx, c.ID, format, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		// Through the descriptor: the name is in a directory the user
		// chose, which others may write (a shared /tmp).
		if err = tmp.Chmod(0o644); err != nil {
			err = fmt.Errorf("set permissions of %s: %w", path, err)
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if interrupted() {
			return fmt.Errorf("download of %s interrupted; nothing was saved", c.ID)
		}
		return c.explain(g, err)
	}
	if err := c.place(tmp.Name(), path); err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(g.out(), map[string]any{"path": path, "bytes": n, "format": format})
	}
	fmt.Fprintf(g.out(), "Saved %s (%s) to %s\n", c.ID, bytesize(n), path)
	return nil
}

// place moves the finished download to path. Without --force it links
// instead of renaming, so a file created meanwhile is not clobbered.
func (c *DownloadCmd) place(tmp, path string) error {
	if c.Force {
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("save %s: %w", path, err)
		}
		return nil
	}
	err := os.Link(tmp, path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrExist):
		return fmt.Errorf("%s already exists: use --force to overwrite it or -o to choose another file", path)
	}
	// File systems without hard links: the existence check above has to do.
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}

func (c *DownloadCmd) explain(g *Globals, err error) error {
	if drydock.ErrorCode(err) == drydock.ECONFLICT {
		return fmt.Errorf("job %s has no archived workspace yet (%s): wait for it to finish (drydock logs %s -f), then download again",
			c.ID, drydock.ErrorMessage(err), c.ID)
	}
	return g.explain(err, c.ID)
}

// downloadLink is the link of the archive 'drydock download' saves by
// default (the tar.gz); servers before download_url_tar gave it as
// download_url.
func downloadLink(j *drydock.Job) string {
	if j.DownloadURLTar != "" {
		return j.DownloadURLTar
	}
	return j.DownloadURL
}
