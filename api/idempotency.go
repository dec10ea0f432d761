package api

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/drydockhq/drydock"
)

// Headers of idempotent job creation (IETF draft-ietf-httpapi-idempotency-key-header).
const (
	headerIdempotencyKey = "Idempotency-Key"
	// headerReplayed marks an answer that returns the job an earlier request
	// with the same key created, rather than a new one.
	headerReplayed = "Idempotent-Replayed"
)

// fingerprintPurpose names the canonical form below; a change of the form
// needs a new name, so that old fingerprints are not compared with new.
const fingerprintPurpose = "drydock idempotency fingerprint v1"

// idempotencyKey reads the Idempotency-Key header: ok is false when there
// is none. The draft defines the value as a Structured Field String
// ("..."); a bare value is accepted too, as most clients send one.
func idempotencyKey(r *http.Request) (key string, ok bool, err error) {
	vals := r.Header.Values(headerIdempotencyKey)
	switch len(vals) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", false, drydock.Errorf(drydock.EINVALID, "send one Idempotency-Key header, not %d", len(vals))
	}
	v := strings.TrimSpace(vals[0])
	if strings.HasPrefix(v, `"`) {
		if v, err = parseSFString(v); err != nil {
			return "", false, err
		}
	}
	if err := drydock.CheckIdempotencyKey(v); err != nil {
		return "", false, err
	}
	return v, true, nil
}

// parseSFString decodes a Structured Field String (RFC 8941 §3.3.3): a
// quoted run of printable ASCII in which only \" and \\ are escapes.
func parseSFString(v string) (string, error) {
	bad := func(why string) error {
		return drydock.Errorf(drydock.EINVALID, "Idempotency-Key %s: %s", v, why)
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", bad(`a backslash may only escape " or \`)
			}
			b.WriteByte(v[i])
		case c == '"':
			if i != len(v)-1 {
				return "", bad("nothing may follow the closing quote")
			}
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", bad(fmt.Sprintf("byte 0x%02x is not printable ASCII", c))
		default:
			b.WriteByte(c)
		}
	}
	return "", bad("the closing quote is missing")
}

// fingerprint identifies the job a request asks for, for comparing a
// retry with the request that first used its idempotency key. It covers
// the spec after normalisation and defaults, so that requests asking for
// the same job ("task" or "prompt", an omitted or explicit default
// profile, fields in any order) have one fingerprint; encoding/json writes
// struct fields in order and map keys sorted, which makes the encoding
// canonical, and a field JobSpec gains is covered without a change here.
// (JobSpec, unlike Job, encodes the secrets' values.)
//
// The request may hold secret values, and the fingerprint is stored. A
// plain SHA-256 of it would let whoever reads the database (a backup, a
// replica's operator) test guesses of a secret offline against the hash
// (the other fields are in the job's row in clear), and per-key salt would
// not change that. So the fingerprint is an HMAC under a key derived from
// the server's secrets key (secretbox.Box.MAC), which is not in the
// database: without it the fingerprint tells nothing. Replicas share that
// key, so any of them recognises a retry. A server without a secrets key
// refuses requests with secrets before anything is stored, so its plain
// hash covers only what the job's row already holds.
func (s *Server) fingerprint(spec drydock.JobSpec, input []byte) ([]byte, error) {
	// "egress": [] (nothing) and no egress (the server's default) differ,
	// though both are left out of spec's JSON. The mark is added only for
	// the empty list, so every other fingerprint stays as it was.
	b, err := json.Marshal(struct {
		drydock.JobSpec
		EmptyEgress bool `json:"egress_empty,omitempty"`
	}{spec, spec.Egress != nil && len(spec.Egress) == 0})
	if err != nil {
		return nil, fmt.Errorf("encode request fingerprint: %w", err)
	}
	if input != nil {
		// An upload's digest follows the spec after a NUL, which JSON text
		// cannot hold, so no spec alone makes the same bytes.
		b = append(append(b, 0), input...)
	}
	defer clear(b) // it holds the secrets' values
	if s.cfg.Secrets != nil {
		return s.cfg.Secrets.MAC(fingerprintPurpose, b), nil
	}
	h := sha256.New()
	h.Write([]byte(fingerprintPurpose))
	h.Write([]byte{0})
	h.Write(b)
	return h.Sum(nil), nil
}
