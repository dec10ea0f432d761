package local_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/artifact/artifacttest"
	"github.com/drydockhq/drydock/artifact/local"
)

func TestConformance(t *testing.T) {
	artifacttest.Run(t, func(t *testing.T) drydock.ArtifactStore {
		s, err := local.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, artifacttest.Options{})
}

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n > 0 {
		f.n--
		return copy(p, "data"), nil
	}
	return 0, errors.New("boom")
}

// A failed Put removes its temporary file, and an invalid key writes
// nothing anywhere.
func TestFailedPutLeavesNoTemporaryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _ := local.New(dir)
	if _, err := s.Put(t.Context(), "k", strings.NewReader("old")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(t.Context(), "k", &failingReader{n: 3}); err == nil {
		t.Fatal("Put with failing reader succeeded")
	}
	if _, err := s.Put(t.Context(), "../escape", strings.NewReader("x")); err == nil {
		t.Fatal("Put of ../escape succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files left behind: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape")); err == nil {
		t.Fatal("a Put wrote outside the store's directory")
	}
}
