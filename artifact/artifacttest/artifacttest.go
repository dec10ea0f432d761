// Package artifacttest is the contract of drydock.ArtifactStore: every
// store runs Run against a fresh instance, so the local directory and the
// S3 bucket cannot drift apart.
package artifacttest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/drydockhq/drydock"
)

// Options tunes the suite to a store.
type Options struct {
	// LargeSize is the size of the streamed blob of LargeStreamedPut; it
	// should cross the store's internal chunking (an S3 part). Zero means
	// 12 MiB.
	LargeSize int
}

// Run runs every case of the contract, each on a store of its own from
// newStore.
func Run(t *testing.T, newStore func(t *testing.T) drydock.ArtifactStore, o Options) {
	if o.LargeSize == 0 {
		o.LargeSize = 12<<20 + 12345
	}
	cases := []struct {
		name string
		fn   func(*testing.T, drydock.ArtifactStore)
	}{
		{"PutThenGet", testPutThenGet},
		{"PutOverwrites", testPutOverwrites},
		{"DeleteTwice", testDeleteTwice},
		{"Missing", testMissing},
		{"InvalidKeys", testInvalidKeys},
		{"JobKeys", testJobKeys},
		{"FailedPutLeavesNothing", testFailedPutLeavesNothing},
		{"CancelledPutLeavesNothing", testCancelledPutLeavesNothing},
		{"LargeStreamedPut", func(t *testing.T, s drydock.ArtifactStore) { testLargeStreamedPut(t, s, o.LargeSize) }},
		{"ConcurrentPuts", testConcurrentPuts},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newStore(t))
		})
	}
}

func put(t *testing.T, s drydock.ArtifactStore, key, body string) {
	t.Helper()
	n, err := s.Put(t.Context(), key, strings.NewReader(body))
	if err != nil || n != int64(len(body)) {
		t.Fatalf("Put(%s) = %d, %v; want %d, nil", key, n, err, len(body))
	}
}

func get(t *testing.T, s drydock.ArtifactStore, key string) []byte {
	t.Helper()
	rc, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := drydock.ErrorCode(err); got != code {
		t.Errorf("%s: %v (code %q), want code %q", what, err, got, code)
	}
}

// Put returns the bytes written and Get gives them back.
func testPutThenGet(t *testing.T, s drydock.ArtifactStore) {
	put(t, s, "job1.tar.gz", "hello")
	if got := get(t, s, "job1.tar.gz"); string(got) != "hello" {
		t.Errorf("Get = %q, want hello", got)
	}
	put(t, s, "empty.tar.gz", "")
	if got := get(t, s, "empty.tar.gz"); len(got) != 0 {
		t.Errorf("Get of an empty blob = %q", got)
	}
}

// A second Put under a key replaces the blob whole.
func testPutOverwrites(t *testing.T, s drydock.ArtifactStore) {
	put(t, s, "k.tar.gz", "a longer first version")
	put(t, s, "k.tar.gz", "bye")
	if got := get(t, s, "k.tar.gz"); string(got) != "bye" {
		t.Errorf("Get after overwrite = %q, want bye", got)
	}
}

// Delete is idempotent, and a deleted blob is not found.
func testDeleteTwice(t *testing.T, s drydock.ArtifactStore) {
	put(t, s, "gone.tar.gz", "x")
	put(t, s, "kept.tar.gz", "y")
	for i := range 2 {
		if err := s.Delete(t.Context(), "gone.tar.gz"); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	_, err := s.Get(t.Context(), "gone.tar.gz")
	wantCode(t, "Get after Delete", err, drydock.ENOTFOUND)
	if got := get(t, s, "kept.tar.gz"); string(got) != "y" {
		t.Errorf("Delete of another key changed this one to %q", got)
	}
}

// A key never put is not found, and deleting it is no error.
func testMissing(t *testing.T, s drydock.ArtifactStore) {
	_, err := s.Get(t.Context(), "nothing.tar.gz")
	wantCode(t, "Get of a missing key", err, drydock.ENOTFOUND)
	if err := s.Delete(t.Context(), "nothing.tar.gz"); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
}

// Keys that could name a path, or that another store would refuse, are
// refused by every method.
func testInvalidKeys(t *testing.T, s drydock.ArtifactStore) {
	put(t, s, "x", "safe")
	for _, k := range []string{"", ".", "..", "../x", "a/b", "/etc/passwd", ".hidden", "a b", "a\x00b", "a\\b", strings.Repeat("x", 202)} {
		_, err := s.Put(t.Context(), k, strings.NewReader("x"))
		wantCode(t, fmt.Sprintf("Put(%q)", k), err, drydock.EINVALID)
		_, err = s.Get(t.Context(), k)
		wantCode(t, fmt.Sprintf("Get(%q)", k), err, drydock.EINVALID)
		wantCode(t, fmt.Sprintf("Delete(%q)", k), s.Delete(t.Context(), k), drydock.EINVALID)
	}
	if got := get(t, s, "x"); string(got) != "safe" {
		t.Errorf("refused keys changed another blob to %q", got)
	}
}

// The keys the orchestrator uses are accepted.
func testJobKeys(t *testing.T, s drydock.ArtifactStore) {
	id := "job-" + drydock.RandomHex(8)
	for _, k := range []string{id + ".tar.gz", drydock.DiffArtifactKey(id), strings.Repeat("x", 201)} {
		if err := drydock.CheckArtifactKey(k); err != nil {
			t.Fatalf("CheckArtifactKey(%q): %v", k, err)
		}
		put(t, s, k, k)
		if got := get(t, s, k); string(got) != k {
			t.Errorf("Get(%q) = %q", k, got)
		}
	}
}

// FailingReader fails every Read with Err: a source that breaks, for a
// store's own tests of a failed Put.
type FailingReader struct{ Err error }

func (f FailingReader) Read([]byte) (int, error) { return 0, f.Err }

// A Put whose source fails mid-stream leaves no blob under a new key and
// the old one under an existing key.
func testFailedPutLeavesNothing(t *testing.T, s drydock.ArtifactStore) {
	put(t, s, "kept.tar.gz", "old")
	boom := errors.New("tar stream broke")
	for _, key := range []string{"new.tar.gz", "kept.tar.gz"} {
		// More than an S3 part goes up before the source fails.
		r := io.MultiReader(bytes.NewReader(make([]byte, 7<<20)), FailingReader{boom})
		if _, err := s.Put(t.Context(), key, r); !errors.Is(err, boom) {
			t.Errorf("Put(%s) with a failing source: %v, want %v", key, err, boom)
		}
	}
	_, err := s.Get(t.Context(), "new.tar.gz")
	wantCode(t, "Get after a failed Put", err, drydock.ENOTFOUND)
	if got := get(t, s, "kept.tar.gz"); string(got) != "old" {
		t.Errorf("a failed overwrite changed the blob to %d bytes", len(got))
	}
}

// CancelAfter reads R and calls Cancel once N bytes have been read: a Put
// whose context ends midway.
type CancelAfter struct {
	R      io.Reader
	N      int
	Cancel context.CancelFunc
	read   int
}

func (c *CancelAfter) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.read += n
	if c.read >= c.N {
		c.Cancel()
	}
	return n, err
}

// A Put whose context ends mid-stream fails with the context's error and
// leaves nothing.
func testCancelledPutLeavesNothing(t *testing.T, s drydock.ArtifactStore) {
	put(t, s, "kept.tar.gz", "old")
	for _, key := range []string{"cancelled.tar.gz", "kept.tar.gz"} {
		ctx, cancel := context.WithCancel(t.Context())
		r := &CancelAfter{R: bytes.NewReader(make([]byte, 8<<20)), N: 6 << 20, Cancel: cancel}
		_, err := s.Put(ctx, key, r)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Put(%s) with a cancelled context: %v, want %v", key, err, context.Canceled)
		}
	}
	_, err := s.Get(t.Context(), "cancelled.tar.gz")
	wantCode(t, "Get after a cancelled Put", err, drydock.ENOTFOUND)
	if got := get(t, s, "kept.tar.gz"); string(got) != "old" {
		t.Errorf("a cancelled overwrite changed the blob to %d bytes", len(got))
	}
}

// A blob of unknown length (a pipe, as a workspace's gzip stream is)
// larger than the store's chunks comes back byte for byte.
func testLargeStreamedPut(t *testing.T, s drydock.ArtifactStore, size int) {
	src := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(src.Uint32())
	}
	pr, pw := io.Pipe()
	go func() {
		for b := data; len(b) > 0; {
			n := min(len(b), 64<<10)
			if _, err := pw.Write(b[:n]); err != nil {
				return
			}
			b = b[n:]
		}
		pw.Close()
	}()
	n, err := s.Put(t.Context(), "big.tar.gz", pr)
	pr.Close()
	if err != nil || n != int64(size) {
		t.Fatalf("Put = %d, %v; want %d", n, err, size)
	}
	got := get(t, s, "big.tar.gz")
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Errorf("Get returned %d bytes that differ from the %d put", len(got), size)
	}
}

// Jobs end at the same time: Puts to different keys do not mix.
func testConcurrentPuts(t *testing.T, s drydock.ArtifactStore) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			key := fmt.Sprintf("job%d.tar.gz", i)
			body := strings.Repeat(fmt.Sprint(i), 1000+i)
			if _, err := s.Put(t.Context(), key, strings.NewReader(body)); err != nil {
				t.Errorf("Put(%s): %v", key, err)
			}
		})
	}
	wg.Wait()
	for i := range 8 {
		key := fmt.Sprintf("job%d.tar.gz", i)
		if got := get(t, s, key); string(got) != strings.Repeat(fmt.Sprint(i), 1000+i) {
			t.Errorf("Get(%s) = %d bytes of someone else's", key, len(got))
		}
	}
}
