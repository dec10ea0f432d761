package drydock

import "time"

// MaxIdempotencyKeyLen bounds an idempotency key, in bytes.
const MaxIdempotencyKeyLen = 255

// DefaultIdempotencyTTL is how long a key is remembered when the server is
// not told otherwise: long enough for a client to retry after a restart,
// a network cut or a night, short enough that the table stays small.
const DefaultIdempotencyTTL = 24 * time.Hour

// IdempotencyKey makes the creation of a job safe to retry (the
// Idempotency-Key header of the IETF httpapi draft). It belongs to the
// creating job's owner: two owners may use the same Key.
type IdempotencyKey struct {
	// Key is what the client sent: 1 to MaxIdempotencyKeyLen printable
	// ASCII characters.
	Key string
	// Fingerprint identifies the request the key was first used with, so
	// that a retry can be told from a new request that reuses the key. It
	// is a keyed hash (never the request itself, which may hold secrets);
	// the store compares it without interpreting it.
	Fingerprint []byte
	// TTL is how long from now (by the store's clock) the key holds.
	TTL time.Duration
}

// Check returns an EINVALID *Error unless k can be stored.
func (k IdempotencyKey) Check() error {
	if err := CheckIdempotencyKey(k.Key); err != nil {
		return err
	}
	if len(k.Fingerprint) == 0 {
		return Errorf(EINVALID, "idempotency key %q has no request fingerprint", k.Key)
	}
	if k.TTL <= 0 {
		return Errorf(EINVALID, "idempotency key %q has no lifetime", k.Key)
	}
	return nil
}

// CheckIdempotencyKey returns an EINVALID *Error unless key is 1 to
// MaxIdempotencyKeyLen printable ASCII characters (space to tilde).
func CheckIdempotencyKey(key string) error {
	if key == "" || len(key) > MaxIdempotencyKeyLen {
		return Errorf(EINVALID, "Idempotency-Key must be 1 to %d characters long, not %d", MaxIdempotencyKeyLen, len(key))
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return Errorf(EINVALID, "Idempotency-Key may hold printable ASCII characters only; byte %d is 0x%02x", i, c)
		}
	}
	return nil
}

// KeyReused is the EKEYREUSED error of a key held by another request until
// the time given; it says until when, so a client knows whether waiting
// would help.
func KeyReused(key string, until time.Time) *Error {
	return Errorf(EKEYREUSED, "Idempotency-Key %q was already used for another request (a different body) and is held until %s; send a new key for a new job",
		key, until.UTC().Format(time.RFC3339))
}
