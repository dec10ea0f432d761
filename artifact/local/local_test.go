package local_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/artifact/local"
)

func TestPutGetDelete(t *testing.T) {
	t.Parallel()
	s, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	n, err := s.Put(ctx, "job1.tar.gz", strings.NewReader("hello"))
	if err != nil || n != 5 {
		t.Fatalf("Put = %d, %v", n, err)
	}
	rc, err := s.Get(ctx, "job1.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "hello" {
		t.Fatalf("Get = %q", b)
	}
	if err := s.Delete(ctx, "job1.tar.gz"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "job1.tar.gz"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if _, err := s.Get(ctx, "job1.tar.gz"); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Fatalf("Get after delete: %v", err)
	}
}

func TestRejectsUnsafeKeys(t *testing.T) {
	t.Parallel()
	s, _ := local.New(t.TempDir())
	for _, key := range []string{"", "..", "../x", "a/b", "/etc/passwd", ".hidden", "a\x00b"} {
		if _, err := s.Put(t.Context(), key, strings.NewReader("x")); drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("Put(%q) = %v, want invalid", key, err)
		}
	}
}

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n > 0 {
		f.n--
		return copy(p, "data"), nil
	}
	return 0, errors.New("boom")
}

func TestFailedPutLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _ := local.New(dir)
	if _, err := s.Put(t.Context(), "k", strings.NewReader("old")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(t.Context(), "k", &failingReader{n: 3}); err == nil {
		t.Fatal("Put with failing reader succeeded")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "k"))
	if string(b) != "old" {
		t.Fatalf("previous artifact damaged: %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
}
