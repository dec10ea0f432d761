package api

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
)

// UploadLimits bound a workspace archive sent with a job. Zero fields take
// the defaults below.
type UploadLimits struct {
	// Bytes bounds the archive as sent (compressed).
	Bytes int64
	// Expanded bounds the sum of its files' sizes once unpacked, so that a
	// small archive cannot expand past the sandbox's workspace.
	Expanded int64
	// Entries bounds its entries (files, directories and links).
	Entries int
	// EntryBytes bounds one file.
	EntryBytes int64
}

// Defaults of UploadLimits. The expanded size matches the default
// workspace size of a sandbox (2 GiB).
const (
	DefaultMaxUploadBytes    = 256 << 20
	DefaultMaxUploadExpanded = 2 << 30
	DefaultMaxUploadEntries  = 100_000
	DefaultMaxUploadEntry    = 1 << 30
	DefaultMaxUploads        = 8
	// Names longer than Linux's PATH_MAX, or with a component longer than
	// NAME_MAX, could not be created in the sandbox.
	maxUploadPath   = 4096
	maxUploadName   = 255
	maxLinkHops     = 40 // as Linux's ELOOP
	maxZipLinkBytes = 4096
)

func (l UploadLimits) orDefaults() UploadLimits {
	if l.Bytes <= 0 {
		l.Bytes = DefaultMaxUploadBytes
	}
	if l.Expanded <= 0 {
		l.Expanded = DefaultMaxUploadExpanded
	}
	if l.Entries <= 0 {
		l.Entries = DefaultMaxUploadEntries
	}
	if l.EntryBytes <= 0 {
		l.EntryBytes = DefaultMaxUploadEntry
	}
	return l
}

// archiveStats describes a normalized archive.
type archiveStats struct {
	Format  string // "tar", "tar.gz" or "zip"
	Entries int
	Bytes   int64 // the files' sizes, summed
}

// entry is one member of an uploaded archive, whatever its format.
type entry struct {
	name     string // as in the archive
	kind     byte   // tar.TypeDir, TypeReg, TypeSymlink or TypeLink
	mode     fs.FileMode
	size     int64
	linkname string
	modTime  time.Time
	body     io.Reader // regular files only
}

// badEntry is an EINVALID error naming the archive member at fault.
func badEntry(name, format string, args ...any) error {
	return drydock.Errorf(drydock.EINVALID, "workspace archive: entry %q %s", name, fmt.Sprintf(format, args...))
}

// normalizeArchive reads the uploaded archive in src (tar, tar.gz or zip,
// told by its content), checks every entry, and writes it to dst as a
// gzip-compressed tar whose names are clean, relative and unique. Nothing
// in what it writes can leave the directory it is unpacked in: names with
// "..", absolute names and links that resolve outside are refused, as are
// devices, FIFOs, duplicates, and a name below a file or a link. Only
// permission bits are kept (no setuid), owners are dropped. Any error is
// an EINVALID, ETOOLARGE or unsupported-media *drydock.Error for the
// client; dst then holds garbage that the caller throws away.
func normalizeArchive(dst io.Writer, src *os.File, lim UploadLimits) (*archiveStats, error) {
	lim = lim.orDefaults()
	fi, err := src.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat upload: %w", err)
	}
	var head [512]byte
	n, _ := src.ReadAt(head[:], 0)
	format, err := sniffArchive(head[:n])
	if err != nil {
		return nil, err
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read upload: %w", err)
	}
	zw := gzip.NewWriter(dst)
	v := &archiveCheck{lim: lim, tw: tar.NewWriter(zw), seen: map[string]byte{}, links: map[string]string{}}
	v.stats.Format = format
	switch format {
	case "zip":
		err = v.readZip(src, fi.Size())
	case "tar.gz":
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bufio.NewReader(src)); err != nil {
			return nil, drydock.Errorf(drydock.EINVALID, "workspace archive: not a valid gzip stream: %v", err)
		}
		err = v.readTar(zr)
	default:
		err = v.readTar(src)
	}
	if err != nil {
		return nil, err
	}
	if err := v.checkLinks(); err != nil {
		return nil, err
	}
	if err := v.tw.Close(); err != nil {
		return nil, fmt.Errorf("write normalized archive: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("write normalized archive: %w", err)
	}
	return &v.stats, nil
}

// sniffArchive tells the format from the first bytes.
func sniffArchive(head []byte) (string, error) {
	switch {
	case len(head) == 0:
		return "", drydock.Errorf(drydock.EINVALID, "workspace archive is empty; send a tar, tar.gz or zip file")
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return "tar.gz", nil
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return "zip", nil
	case len(head) >= 262 && bytes.Equal(head[257:262], []byte("ustar")):
		return "tar", nil
	case len(head) == 512 && bytes.Count(head, []byte{0}) == 512:
		return "tar", nil // an empty tar: its end-of-archive blocks alone
	case bytes.HasPrefix(head, []byte("BZh")):
		return "", drydock.Errorf(drydock.EUNSUPPORTEDMEDIA, "workspace archive is bzip2-compressed; send a tar, tar.gz or zip file")
	case bytes.HasPrefix(head, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return "", drydock.Errorf(drydock.EUNSUPPORTEDMEDIA, "workspace archive is xz-compressed; send a tar, tar.gz or zip file")
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return "", drydock.Errorf(drydock.EUNSUPPORTEDMEDIA, "workspace archive is zstd-compressed; send a tar, tar.gz or zip file")
	}
	return "", drydock.Errorf(drydock.EUNSUPPORTEDMEDIA, "workspace part is not a tar, tar.gz or zip archive (curl: -F workspace=@FILE, with the @)")
}

// archiveCheck holds what the entries read so far established.
type archiveCheck struct {
	lim   UploadLimits
	tw    *tar.Writer
	stats archiveStats
	// seen maps each clean name to what it is: an explicit entry's kind,
	// or 'i' for a directory implied by a deeper name.
	seen map[string]byte
	// links maps each symbolic link's clean name to its target, checked
	// once the whole archive is known (a link may point through a link
	// that comes later).
	links map[string]string
}

func (v *archiveCheck) readTar(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return drydock.Errorf(drydock.EINVALID, "workspace archive: damaged %s after %d entries: %v", v.stats.Format, v.stats.Entries, err)
		}
		e := entry{name: hdr.Name, mode: hdr.FileInfo().Mode().Perm(), size: hdr.Size, linkname: hdr.Linkname, modTime: hdr.ModTime}
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeRegA, tar.TypeGNUSparse:
			e.kind, e.body = tar.TypeReg, tr
		case tar.TypeDir:
			e.kind = tar.TypeDir
		case tar.TypeSymlink:
			e.kind = tar.TypeSymlink
		case tar.TypeLink:
			e.kind = tar.TypeLink
		case tar.TypeXGlobalHeader:
			continue
		case tar.TypeChar, tar.TypeBlock:
			return badEntry(hdr.Name, "is a device; only files, directories and links can be uploaded")
		case tar.TypeFifo:
			return badEntry(hdr.Name, "is a FIFO; only files, directories and links can be uploaded")
		default:
			return badEntry(hdr.Name, "has tar type %q, which is not a file, directory or link", string(hdr.Typeflag))
		}
		if err := v.add(e); err != nil {
			return err
		}
	}
}

func (v *archiveCheck) readZip(f *os.File, size int64) error {
	// archive/zip holds every central directory record in memory before
	// the first entry can be looked at, and reads records as long as
	// they follow each other whatever count the archive declares: a
	// 256 MiB zip of empty entries would cost gigabytes. Each record
	// starts with its signature, so their number is at most the number
	// of signatures in the file, which a scan finds in constant memory.
	if n, err := countZipRecords(f); err != nil {
		return fmt.Errorf("read upload: %w", err)
	} else if n > v.lim.Entries {
		return drydock.Errorf(drydock.ETOOLARGE, "workspace archive has more than %d entries", v.lim.Entries)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read upload: %w", err)
	}
	zr, err := zip.NewReader(f, size)
	if err != nil {
		return drydock.Errorf(drydock.EINVALID, "workspace archive: damaged zip: %v", err)
	}
	for _, zf := range zr.File {
		m := zf.Mode()
		e := entry{name: zf.Name, mode: m.Perm(), modTime: zf.Modified}
		if zf.UncompressedSize64 > uint64(v.lim.EntryBytes) {
			return drydock.Errorf(drydock.ETOOLARGE, "workspace archive: entry %q is %d bytes; the limit for one file is %d", zf.Name, zf.UncompressedSize64, v.lim.EntryBytes)
		}
		switch {
		case m.IsDir():
			e.kind = tar.TypeDir
		case m&fs.ModeSymlink != 0:
			e.kind = tar.TypeSymlink
			target, err := readZipMember(zf, maxZipLinkBytes)
			if err != nil {
				return err
			}
			e.linkname = string(target)
		case m.IsRegular():
			e.kind, e.size = tar.TypeReg, int64(zf.UncompressedSize64)
			rc, err := zf.Open()
			if err != nil {
				return badEntry(zf.Name, "cannot be read: %v", err)
			}
			e.body = &zipBody{rc: rc, name: zf.Name}
			err = v.add(e)
			rc.Close()
			if err != nil {
				return err
			}
			continue
		case m&(fs.ModeDevice|fs.ModeCharDevice) != 0:
			return badEntry(zf.Name, "is a device; only files, directories and links can be uploaded")
		case m&fs.ModeNamedPipe != 0:
			return badEntry(zf.Name, "is a FIFO; only files, directories and links can be uploaded")
		default:
			return badEntry(zf.Name, "is a special file (%s); only files, directories and links can be uploaded", m.Type())
		}
		if err := v.add(e); err != nil {
			return err
		}
	}
	return nil
}

// countZipRecords counts the central directory signatures in r.
func countZipRecords(r io.Reader) (int, error) {
	sig := []byte("PK\x01\x02")
	buf := make([]byte, 64<<10)
	n, carry := 0, 0
	for {
		m, err := r.Read(buf[carry:])
		data := buf[:carry+m]
		n += bytes.Count(data, sig)
		// Keep the last bytes: a signature may span two reads.
		carry = min(len(data), len(sig)-1)
		copy(buf, data[len(data)-carry:])
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// zipBody reads a zip member; it turns archive/zip's size and checksum
// errors into a message about the entry.
type zipBody struct {
	rc   io.Reader
	name string
}

func (z *zipBody) Read(p []byte) (int, error) {
	n, err := z.rc.Read(p)
	if err != nil && err != io.EOF {
		err = badEntry(z.name, "is damaged: %v", err)
	}
	return n, err
}

func readZipMember(zf *zip.File, limit int64) ([]byte, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, badEntry(zf.Name, "cannot be read: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, badEntry(zf.Name, "is damaged: %v", err)
	}
	if int64(len(b)) > limit {
		return nil, badEntry(zf.Name, "is a link whose target is longer than %d bytes", limit)
	}
	return b, nil
}

// cleanEntryName turns an archive member's name into a clean relative
// path, "" for the archive's root ("./"), or refuses it.
func cleanEntryName(name string) (string, error) {
	switch {
	case name == "":
		return "", drydock.Errorf(drydock.EINVALID, "workspace archive: an entry has an empty name")
	case strings.IndexByte(name, 0) >= 0:
		return "", badEntry(name, "has a NUL byte in its name")
	case len(name) > maxUploadPath:
		return "", badEntry(name[:64]+"...", "has a name of %d bytes; the limit is %d", len(name), maxUploadPath)
	case strings.HasPrefix(name, "/"):
		return "", badEntry(name, "has an absolute name; names must be relative to the workspace")
	}
	var parts []string
	for p := range strings.SplitSeq(name, "/") {
		switch {
		case p == "" || p == ".":
			continue
		case p == "..":
			return "", badEntry(name, "has a \"..\" component and would leave the workspace")
		case len(p) > maxUploadName:
			return "", badEntry(name, "has a name component of %d bytes; the limit is %d", len(p), maxUploadName)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "/"), nil
}

// add checks one entry against the limits and the entries before it, and
// writes it.
func (v *archiveCheck) add(e entry) error {
	name, err := cleanEntryName(e.name)
	if err != nil {
		return err
	}
	if name == "" {
		if e.kind == tar.TypeDir {
			return nil // the workspace itself
		}
		return badEntry(e.name, "names the workspace itself but is not a directory")
	}
	v.stats.Entries++
	if v.stats.Entries > v.lim.Entries {
		return drydock.Errorf(drydock.ETOOLARGE, "workspace archive has more than %d entries", v.lim.Entries)
	}
	if prev, ok := v.seen[name]; ok && (prev != 'i' || e.kind != tar.TypeDir) {
		if prev == 'i' {
			return badEntry(e.name, "is not a directory, but other entries are inside it")
		}
		return badEntry(e.name, "appears more than once; each name may appear once")
	}
	// Every parent must be a directory: an entry below a file or a link
	// would be written through it.
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		switch v.seen[dir] {
		case 0:
			v.seen[dir] = 'i'
			continue
		case tar.TypeDir, 'i':
			continue
		case tar.TypeSymlink:
			return badEntry(e.name, "is below %q, which is a symbolic link", dir)
		default:
			return badEntry(e.name, "is below %q, which is a file", dir)
		}
	}
	v.seen[name] = e.kind
	hdr := &tar.Header{Name: name, ModTime: e.modTime, Format: tar.FormatPAX}
	switch e.kind {
	case tar.TypeDir:
		hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, name+"/", int64(e.mode|0o700)
	case tar.TypeSymlink:
		if err := checkLinkTarget(e.name, e.linkname); err != nil {
			return err
		}
		v.links[name] = e.linkname
		hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, e.linkname, 0o777
	case tar.TypeLink:
		// A hard link must name a file this archive holds already, so it
		// can only share what the upload itself brought.
		target, err := cleanEntryName(e.linkname)
		if err != nil || target == "" || v.seen[target] != tar.TypeReg {
			return badEntry(e.name, "is a hard link to %q, which is not a file earlier in the archive", e.linkname)
		}
		hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeLink, target, int64(e.mode|0o600)
	case tar.TypeReg:
		if e.size > v.lim.EntryBytes {
			return drydock.Errorf(drydock.ETOOLARGE, "workspace archive: entry %q is %d bytes; the limit for one file is %d", e.name, e.size, v.lim.EntryBytes)
		}
		if v.stats.Bytes+e.size > v.lim.Expanded {
			return drydock.Errorf(drydock.ETOOLARGE, "workspace archive expands to more than %d bytes", v.lim.Expanded)
		}
		v.stats.Bytes += e.size
		hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, e.size, int64(e.mode|0o600)
	}
	if err := v.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write normalized archive: %w", err)
	}
	if e.kind != tar.TypeReg {
		return nil
	}
	// The size a header declares is all that is copied; a zip member
	// must then end exactly there (reading its end checks its CRC).
	if _, err := io.CopyN(v.tw, e.body, e.size); err != nil {
		var de *drydock.Error
		if errors.As(err, &de) {
			return err
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return badEntry(e.name, "is shorter than its header says")
		}
		return badEntry(e.name, "cannot be read: %v", err)
	}
	if _, ok := e.body.(*zipBody); ok {
		var one [1]byte
		if n, err := e.body.Read(one[:]); n > 0 {
			return badEntry(e.name, "is longer than its header says")
		} else if err != nil && err != io.EOF {
			return err
		}
	}
	return nil
}

// checkLinkTarget refuses symbolic link targets that leave the workspace
// on their own; checkLinks resolves what passes through other links.
func checkLinkTarget(name, target string) error {
	switch {
	case target == "":
		return badEntry(name, "is a symbolic link with an empty target")
	case strings.IndexByte(target, 0) >= 0:
		return badEntry(name, "is a symbolic link whose target has a NUL byte")
	case len(target) > maxUploadPath:
		return badEntry(name, "is a symbolic link whose target is longer than %d bytes", maxUploadPath)
	case strings.HasPrefix(target, "/"):
		return badEntry(name, "is a symbolic link to the absolute path %q; links must stay inside the workspace", target)
	}
	return nil
}

// checkLinks resolves every symbolic link of the archive as the kernel
// would once it is unpacked in an empty workspace, following the
// archive's other links, and refuses one that ends outside it: "a -> b/.."
// is inside lexically, but not if b is itself a link to "..".
func (v *archiveCheck) checkLinks() error {
	for name, target := range v.links {
		if _, err := v.resolve(path.Dir(name) + "/" + target); err != nil {
			if errors.Is(err, errLinkLoop) {
				return badEntry(name, "is a symbolic link in a loop of more than %d links", maxLinkHops)
			}
			return badEntry(name, "is a symbolic link to %q, which leads out of the workspace", target)
		}
	}
	return nil
}

var (
	errLinkEscape = errors.New("leaves the workspace")
	errLinkLoop   = errors.New("too many links")
)

// resolve walks p (relative to the workspace, unclean: ".." must be
// applied after the links before it) one component at a time, replacing
// each component that is a link of the archive by its target, and returns
// the resolved clean path.
func (v *archiveCheck) resolve(p string) (string, error) {
	var cur []string
	hops := 0
	parts := strings.Split(p, "/")
	for i := 0; i < len(parts); i++ {
		c := parts[i]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return "", errLinkEscape
			}
			cur = cur[:len(cur)-1]
			continue
		}
		cur = append(cur, c)
		target, ok := v.links[strings.Join(cur, "/")]
		if !ok {
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", errLinkLoop
		}
		if strings.HasPrefix(target, "/") {
			return "", errLinkEscape
		}
		// The rest of the path continues from where the link points.
		cur = cur[:len(cur)-1]
		rest := append(strings.Split(target, "/"), parts[i+1:]...)
		parts = append(append([]string{}, cur...), rest...)
		cur, i = nil, -1
	}
	return strings.Join(cur, "/"), nil
}
