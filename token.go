package drydock

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"
)

// Token is an API token. The secret itself is shown once at creation and never
// stored: Hash is its SHA-256.
type Token struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Admin      bool       `json:"admin"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	Hash       []byte     `json:"-"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
}

// TokenPrefix starts every API token so that secret scanners and people can
// recognize one.
const TokenPrefix = "ddk_"

// NewTokenSecret returns a fresh random token and the hash to store.
func NewTokenSecret() (secret string, hash []byte) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // cannot happen on Linux
	}
	secret = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashToken(secret)
}

// HashToken is the stored form of a token. Tokens carry 256 random bits, so a
// fast hash is enough: no dictionary attack applies.
func HashToken(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}
