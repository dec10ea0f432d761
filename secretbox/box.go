package secretbox

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/drydockhq/drydock"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// version is the first byte of every sealed value; a new format gets a new
// one so that old values still open.
const version = 1

const (
	keyIDSize = 8
	nonceSize = 12
	header    = 1 + keyIDSize + nonceSize
)

// ErrWrongKey is returned by Open for a value sealed under another key.
var ErrWrongKey = errors.New("sealed under another key")

// Box seals and opens secret values under one key. It is safe for
// concurrent use.
type Box struct {
	aead   cipher.AEAD
	keyID  [keyIDSize]byte
	macKey [sha256.Size]byte
}

// New returns a Box for a KeySize-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secrets key is %d bytes; it must be %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	b := &Box{aead: aead}
	// The id is a MAC of a constant: it tells keys apart without telling
	// anything about the key.
	m := hmac.New(sha256.New, key)
	m.Write([]byte("drydock secretbox key id"))
	copy(b.keyID[:], m.Sum(nil))
	// A key of its own for MAC, so that no MAC is ever computed under the
	// encryption key or equals the key id.
	m = hmac.New(sha256.New, key)
	m.Write([]byte("drydock secretbox mac key"))
	copy(b.macKey[:], m.Sum(nil))
	return b, nil
}

// MAC returns the HMAC-SHA256 of data under a key derived from the box's
// key, separated by purpose (a constant naming the use; no NUL byte). Unlike
// a plain hash, a MAC stored beside other data cannot be used to test
// guesses of what it covers without the server's key, so it may cover
// secret values. Servers sharing a key compute the same MAC.
func (b *Box) MAC(purpose string, data []byte) []byte {
	m := hmac.New(sha256.New, b.macKey[:])
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write(data)
	return m.Sum(nil)
}

// additionalData binds a sealed value to its job.
func additionalData(jobID string) []byte {
	return append([]byte("drydock job secrets\x00"), jobID...)
}

// Seal encrypts secrets for the job with this id. An empty map seals to nil:
// there is nothing to keep.
func (b *Box) Seal(jobID string, secrets drydock.SecretValues) ([]byte, error) {
	if len(secrets) == 0 {
		return nil, nil
	}
	plain, err := json.Marshal(map[string]string(secrets))
	if err != nil {
		return nil, fmt.Errorf("encode secrets: %w", err)
	}
	defer clear(plain)
	out := make([]byte, header, header+len(plain)+b.aead.Overhead())
	out[0] = version
	copy(out[1:], b.keyID[:])
	nonce := out[1+keyIDSize : header]
	_, _ = rand.Read(nonce) // never fails (see drydock.RandomHex)
	return b.aead.Seal(out, nonce, plain, additionalData(jobID)), nil
}

// Open decrypts a value Seal made for the job with this id. nil opens to
// nil. A value sealed under another key gives an error wrapping
// ErrWrongKey; a damaged value, or one sealed for another job, an error
// that says it cannot be opened. Neither error shows any of the value.
func (b *Box) Open(jobID string, sealed []byte) (drydock.SecretValues, error) {
	if len(sealed) == 0 {
		return nil, nil
	}
	if len(sealed) < header+b.aead.Overhead() || sealed[0] != version {
		return nil, errors.New("sealed secrets are damaged or of an unknown format")
	}
	if !bytes.Equal(sealed[1:1+keyIDSize], b.keyID[:]) {
		return nil, ErrWrongKey
	}
	plain, err := b.aead.Open(nil, sealed[1+keyIDSize:header], sealed[header:], additionalData(jobID))
	if err != nil {
		return nil, errors.New("sealed secrets do not open: damaged, or sealed for another job")
	}
	defer clear(plain)
	var out map[string]string
	if err := json.Unmarshal(plain, &out); err != nil {
		return nil, errors.New("sealed secrets are damaged")
	}
	return drydock.SecretValues(out), nil
}
