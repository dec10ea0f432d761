package bench

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/artifact/local"
)

// Archive measures how fast a workspace is archived the way the runner does
// it at the end of a job: toolboxd streams a tar, gzip compresses it on the
// fly, the local artifact store writes it. The workspace is filled first
// with opts.ArchiveMiB of half source-like text (compressible) and half
// random bytes, in small and large files. The tar alone is timed too, to
// show what compression costs.
func (s *Suite) Archive(ctx context.Context, e *engine) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	return e.withReady(ctx, drydock.ProfileHeadless, func(sb *sandbox) error { return s.archive(ctx, e, sb) })
}

func (s *Suite) archive(ctx context.Context, e *engine, sb *sandbox) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeWorkspace(pw, int64(s.opts.ArchiveMiB)<<20)) }()
	if _, err := sb.tc.UploadTar(ctx, ".", pr); err != nil {
		return fmt.Errorf("fill workspace on %s: %w", e.Name, err)
	}
	dir, err := os.MkdirTemp("", "dd-bench-artifacts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := local.New(dir)
	if err != nil {
		return err
	}
	var gz, plain []float64
	var tarBytes, gzBytes int64
	for i := range s.opts.N {
		s.report.Logf("archive %s %d/%d", e.Name, i+1, s.opts.N)
		t0 := time.Now()
		n, stored, err := archiveOnce(ctx, sb, store, fmt.Sprintf("bench-%d.tar.gz", i))
		if err != nil {
			return fmt.Errorf("archive on %s: %w", e.Name, err)
		}
		gz = append(gz, float64(n)/(1<<20)/time.Since(t0).Seconds())
		tarBytes, gzBytes = n, stored
		t0 = time.Now()
		r, err := sb.tc.DownloadTar(ctx, ".")
		if err != nil {
			return fmt.Errorf("tar on %s: %w", e.Name, err)
		}
		n, err = io.Copy(io.Discard, r)
		r.Close()
		if err != nil {
			return fmt.Errorf("tar on %s: %w", e.Name, err)
		}
		plain = append(plain, float64(n)/(1<<20)/time.Since(t0).Seconds())
	}
	extra := map[string]float64{"tar_mib": round(mib(tarBytes)), "stored_mib": round(mib(gzBytes))}
	s.report.Add(
		Result{Name: "archive.throughput", Engine: e.Name, Mode: "tar+gzip+store", Unit: "MiB/s", Dist: distOf(gz), Extra: extra,
			Note: fmt.Sprintf("workspace of %d MiB (half text, half random) streamed as tar, gzipped, written to the local artifact store", s.opts.ArchiveMiB)},
		Result{Name: "archive.throughput", Engine: e.Name, Mode: "tar only", Unit: "MiB/s", Dist: distOf(plain), Note: "the same tar read and discarded"},
	)
	return nil
}

// archiveOnce does what the runner's archive step does and returns the tar
// size and the stored (compressed) size.
func archiveOnce(ctx context.Context, sb *sandbox, store *local.Store, key string) (int64, int64, error) {
	r, err := sb.tc.DownloadTar(ctx, ".")
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	cr := &countingReader{r: r}
	pr, pw := io.Pipe()
	go func() {
		zw := gzip.NewWriter(pw)
		_, err := io.Copy(zw, cr)
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		pw.CloseWithError(err)
	}()
	stored, err := store.Put(ctx, key, pr)
	pr.CloseWithError(err)
	return cr.n, stored, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// writeWorkspace writes a tar of about size bytes: text files of 0.5–1.5
// MiB and random files of 1 MiB, alternating (about half the bytes each), with a fixed seed so every run
// archives the same bytes.
func writeWorkspace(w io.Writer, size int64) error {
	rng := rand.New(rand.NewPCG(9, 9))
	tw := tar.NewWriter(w)
	line := []byte("\tif err := s.store.Put(ctx, key, r); err != nil { return fmt.Errorf(\"put %s: %w\", key, err) }\n")
	var written int64
	for i := 0; written < size; i++ {
		var data []byte
		name := fmt.Sprintf("src/pkg%02d/file%04d.go", i%50, i)
		if i%2 == 0 {
			n := 512<<10 + rng.IntN(1<<20)
			for len(data) < n {
				data = append(data, line...)
				data = append(data, fmt.Sprintf("// line %d\n", len(data))...)
			}
		} else {
			name = fmt.Sprintf("data/blob%04d.bin", i)
			data = make([]byte, 1<<20)
			for j := 0; j+8 <= len(data); j += 8 {
				v := rng.Uint64()
				for k := range 8 {
					data[j+k] = byte(v >> (8 * k))
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(1, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
		written += int64(len(data))
	}
	return tw.Close()
}

func distOf(v []float64) *Dist {
	d := Values(v)
	return &d
}
