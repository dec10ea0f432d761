package secretbox_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/secretbox"
)

const canary = "canary-7b1e55d0-secret"

func newBox(t *testing.T) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(secretbox.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	in := drydock.SecretValues{"A": canary, "B_2": "another value ü"}
	sealed, err := b.Seal("job-1", in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(canary)) || bytes.Contains(sealed, []byte(`"A"`)) {
		t.Fatal("the sealed value shows its contents")
	}
	out, err := b.Open("job-1", sealed)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out["A"] != canary || out["B_2"] != in["B_2"] {
		t.Fatalf("Open = %v", out.Names())
	}
	again, _ := b.Seal("job-1", in)
	if bytes.Equal(again, sealed) {
		t.Fatal("two seals of one value are equal: the nonce is not fresh")
	}
	if s, err := b.Seal("job-1", nil); s != nil || err != nil {
		t.Fatalf("Seal(nil) = %v, %v", s, err)
	}
	if o, err := b.Open("job-1", nil); o != nil || err != nil {
		t.Fatalf("Open(nil) = %v, %v", o, err)
	}
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	sealed, _ := b.Seal("job-1", drydock.SecretValues{"A": canary})

	if _, err := b.Open("job-2", sealed); err == nil || errors.Is(err, secretbox.ErrWrongKey) {
		t.Fatalf("open for another job: %v", err)
	}
	if _, err := newBox(t).Open("job-1", sealed); !errors.Is(err, secretbox.ErrWrongKey) {
		t.Fatalf("open under another key: %v; want ErrWrongKey", err)
	}
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x40
		if _, err := b.Open("job-1", bad); err == nil {
			t.Fatalf("a value with byte %d changed opens", i)
		}
	}
	for _, short := range [][]byte{{1}, sealed[:20], sealed[:len(sealed)-1]} {
		if _, err := b.Open("job-1", short); err == nil {
			t.Fatalf("a cut value (%d bytes) opens", len(short))
		}
	}
}

func TestNewRefusesShortKey(t *testing.T) {
	t.Parallel()
	if _, err := secretbox.New(make([]byte, 16)); err == nil {
		t.Fatal("a 16-byte key was accepted")
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secrets.key")
	k1, err := secretbox.LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v; want 0600", fi.Mode().Perm())
	}
	k2, err := secretbox.LoadOrCreateKey(path)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second start did not reuse the key: %v", err)
	}
	k3, err := secretbox.LoadKey(path)
	if err != nil || !bytes.Equal(k1, k3) {
		t.Fatalf("LoadKey: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestLoadOrCreateKeyConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secrets.key")
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := secretbox.LoadOrCreateKey(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if !bytes.Equal(k, keys[0]) {
			t.Fatal("concurrent starts made different keys")
		}
	}
}

func TestLoadKeyRefusesBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"short":    "c2hvcnQ=",
		"not b64":  strings.Repeat("!", 44),
		"empty":    "",
		"too long": strings.Repeat("QUFB", 20),
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		os.WriteFile(p, []byte(text), 0o600)
		_, err := secretbox.LoadKey(p)
		if err == nil || !strings.Contains(err.Error(), "32 random bytes in base64") {
			t.Errorf("%s: LoadKey = %v", name, err)
		}
		// LoadOrCreateKey must not replace a broken key: jobs sealed
		// under the old one would be lost without a word.
		if _, err := secretbox.LoadOrCreateKey(p); err == nil {
			t.Errorf("%s: LoadOrCreateKey replaced a broken key", name)
		}
	}
	if _, err := secretbox.LoadKey(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing key file loads")
	}
	// Every base64 spelling of a key works; white space around it too.
	ok := filepath.Join(dir, "ok")
	os.WriteFile(ok, []byte("  "+strings.Repeat("A", 43)+"\n"), 0o600)
	if k, err := secretbox.LoadKey(ok); err != nil || len(k) != 32 {
		t.Errorf("raw base64 key: %v", err)
	}
}
