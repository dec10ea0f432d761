package drydock

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
)

// Random values every runtime needs for its sandboxes. crypto/rand cannot
// fail on Linux (Go 1.24+ panics itself if it does), so none returns an error.

// RandomHex returns n random bytes as 2n hex digits (ids, name suffixes).
func RandomHex(n int) string {
	return hex.EncodeToString(randomBytes(n))
}

// NewSandboxToken returns a fresh bearer token for a sandbox's toolboxd.
func NewSandboxToken() string {
	return base64.RawURLEncoding.EncodeToString(randomBytes(32))
}

// NewVNCPassword returns a per-sandbox VNC password. It is 8 characters
// because classic VNC authentication uses only the first eight; the alphabet
// leaves out look-alike characters for people who type it.
func NewVNCPassword() string {
	const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := randomBytes(8)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // documented never to return an error
	return b
}
