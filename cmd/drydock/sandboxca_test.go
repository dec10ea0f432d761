package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func caPEM(t *testing.T, name string) ([]byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// --sandbox-ca files are read at start: their certificates, and nothing
// else of them, make the bundle sandboxes get.
func TestSandboxCABundle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, _ := caPEM(t, "ca-a")
	b, _ := caPEM(t, "ca-b")
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pa := write("a.crt", append([]byte("# a comment before the block\n"), a...))
	pb := write("b.pem", b)
	got, err := TrustOptions{CA: []string{pa, pb}}.bundle(time.Now(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if want := string(a) + string(b); string(got) != want {
		t.Errorf("bundle:\n%s\nwant:\n%s", got, want)
	}
	if got, err := (TrustOptions{}).bundle(time.Now(), slog.New(slog.DiscardHandler)); err != nil || got != nil {
		t.Errorf("no files: %q, %v", got, err)
	}
}

// A file that would not make sandboxes trust anything, or would hand them
// a key, stops the server with a message naming the flag and the file.
func TestSandboxCARefusesBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, key := caPEM(t, "ca")
	for name, tt := range map[string]struct {
		data []byte
		want string
	}{
		"empty.crt":   {nil, "no PEM certificate in it"},
		"der.crt":     {[]byte{0x30, 0x82, 0x01, 0x0a}, "no PEM certificate in it"},
		"key.pem":     {append(append([]byte{}, cert...), key...), `PEM block 2 is a "EC PRIVATE KEY", not a CERTIFICATE`},
		"broken.crt":  {[]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "PEM block 1: x509:"},
		"missing.crt": {nil, "no such file"},
	} {
		p := filepath.Join(dir, name)
		if name != "missing.crt" {
			if err := os.WriteFile(p, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := TrustOptions{CA: []string{p}}.bundle(time.Now(), slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), "--sandbox-ca "+p+": ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want an error naming the flag, the file and %q", name, err, tt.want)
		}
	}
}
