package runtimetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/image"
)

var currentImages sync.Map // engine host -> *currentImage

type currentImage struct {
	once sync.Once
	ref  string
	err  error
}

// CurrentImage returns the real headless image (DRYDOCK_TEST_IMAGE_HEADLESS)
// with the toolboxd of this source tree installed, built once per engine
// and process; it skips the test when the variable is unset. Tests of
// toolboxd features the prebuilt image may predate use it.
func CurrentImage(t testing.TB, host string) string {
	t.Helper()
	base := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
	if base == "" {
		t.Skip("DRYDOCK_TEST_IMAGE_HEADLESS is not set: no real sandbox image to test in (build one with drydock image build --profile headless)")
	}
	v, _ := currentImages.LoadOrStore(host, &currentImage{})
	c := v.(*currentImage)
	c.once.Do(func() { c.ref, c.err = buildCurrent(host, base) })
	if c.err != nil {
		t.Fatalf("image with this tree's toolboxd: %v", c.err)
	}
	return c.ref
}

func buildCurrent(host, base string) (string, error) {
	dir, err := os.MkdirTemp("", "dd-toolboxd-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "toolboxd")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/drydockhq/drydock/cmd/toolboxd")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{out: string(out), err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return image.WithToolboxd(ctx, image.Options{Profile: drydock.ProfileHeadless, Toolboxd: bin, DockerHost: host}, base)
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return "build toolboxd: " + e.err.Error() + "\n" + e.out }
