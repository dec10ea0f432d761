package client

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// PackOptions tunes PackDir.
type PackOptions struct {
	// IncludeGit packs the .git directory too (the repository's history,
	// for an agent that should use it). By default it is left out, like
	// everything .gitignore files name.
	IncludeGit bool
	// Skipped, when set, hears of each file left out because it is not a
	// regular file, directory or symbolic link (sockets, FIFOs, devices),
	// which a workspace cannot hold.
	Skipped func(rel string, mode fs.FileMode)
}

// PackStats counts what PackDir packed.
type PackStats struct {
	Files, Dirs, Links int
	Bytes              int64 // the files' sizes, summed
	Ignored            int   // files and directories left out by .gitignore (a directory counts once)
}

// PackDir writes dir as a gzip-compressed tar to w, as it walks it, with
// names relative to dir. It honours the .gitignore files of dir and of
// every directory below it (gitignore(5) patterns, the deeper file's
// patterns taking precedence), skips .git unless opt.IncludeGit, and packs
// symbolic links as links (the server refuses those that lead out of the
// workspace). .git/info/exclude and the user's global excludes are not
// read: what is packed depends on the directory alone.
func PackDir(w io.Writer, dir string, opt PackOptions) (PackStats, error) {
	var st PackStats
	root, err := os.OpenRoot(dir)
	if err != nil {
		return st, fmt.Errorf("pack %s: %w", dir, err)
	}
	defer root.Close()
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	p := &packer{root: root, tw: tw, opt: opt, st: &st}
	if err := p.walk("", nil); err != nil {
		return st, fmt.Errorf("pack %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return st, fmt.Errorf("pack %s: %w", dir, err)
	}
	if err := zw.Close(); err != nil {
		return st, fmt.Errorf("pack %s: %w", dir, err)
	}
	return st, nil
}

type packer struct {
	root *os.Root
	tw   *tar.Writer
	opt  PackOptions
	st   *PackStats
}

// walk packs the entries of the directory rel ("" for the root) in name
// order, with the rule sets of its parents.
func (p *packer) walk(rel string, sets []ignoreRules) error {
	name := rel
	if name == "" {
		name = "."
	}
	if f, err := p.root.Open(filepath.Join(filepath.FromSlash(name), ".gitignore")); err == nil {
		sets = append(sets[:len(sets):len(sets)], parseGitignore(rel, f))
		f.Close()
	}
	d, err := p.root.Open(filepath.FromSlash(name))
	if err != nil {
		return err
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	// Name order, so that one directory always packs to the same archive
	// (the server's idempotency check compares archives).
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		child := e.Name()
		if rel != "" {
			child = rel + "/" + child
		}
		isDir := e.IsDir()
		if e.Name() == ".git" && !p.opt.IncludeGit {
			continue
		}
		if ignored(sets, child, isDir) {
			p.st.Ignored++
			continue
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: child, ModTime: info.ModTime(), Mode: int64(info.Mode().Perm()), Format: tar.FormatPAX}
		switch {
		case isDir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, child+"/"
			if err := p.tw.WriteHeader(hdr); err != nil {
				return err
			}
			p.st.Dirs++
			if err := p.walk(child, sets); err != nil {
				return err
			}
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := p.root.Readlink(filepath.FromSlash(child))
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
			if err := p.tw.WriteHeader(hdr); err != nil {
				return err
			}
			p.st.Links++
		case info.Mode().IsRegular():
			if err := p.file(child, hdr); err != nil {
				return err
			}
		default:
			if p.opt.Skipped != nil {
				p.opt.Skipped(child, info.Mode())
			}
		}
	}
	return nil
}

func (p *packer) file(rel string, hdr *tar.Header) error {
	f, err := p.root.Open(filepath.FromSlash(rel))
	if err != nil {
		return err
	}
	defer f.Close()
	// The size is taken from the open file, so that a file replaced
	// between the listing and now is packed as it is.
	info, err := f.Stat()
	if err != nil {
		return err
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
	if err := p.tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.CopyN(p.tw, f, info.Size())
	if err != nil {
		return fmt.Errorf("%s changed while it was packed (%d of %d bytes read): %w", rel, n, info.Size(), err)
	}
	p.st.Files++
	p.st.Bytes += n
	return nil
}
