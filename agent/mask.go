package agent

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"github.com/drydockhq/drydock/secretbox"
)

// Redacted replaces a secret in events and errors.
const Redacted = "[REDACTED]"

// secretName matches environment variable names whose values are secrets.
var secretName = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE|AUTH)`)

// secretShapes match well-known credential formats wherever they appear;
// held sandboxes' command output (package api) is masked with the same list.
var secretShapes = secretbox.CredentialShapes

// minSecret is the shortest value masked by value; shorter ones ("1",
// "true") would mask ordinary text.
const minSecret = 8

// masker hides secrets: known values (from the environment, the config,
// the sandbox) and anything shaped like a credential.
type masker struct {
	values []string // longest first, so a value containing another goes first
}

// newMasker collects the secret-looking variables of environ plus extra
// values.
func newMasker(environ []string, extra ...string) *masker {
	m := &masker{}
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if ok && secretName.MatchString(name) {
			m.add(val)
		}
	}
	for _, v := range extra {
		m.add(v)
	}
	return m
}

func (m *masker) add(v string) {
	v = strings.TrimSpace(v)
	if len(v) < minSecret {
		return
	}
	for _, x := range m.values {
		if x == v {
			return
		}
	}
	m.values = append(m.values, v)
	sort.Slice(m.values, func(i, j int) bool { return len(m.values[i]) > len(m.values[j]) })
}

// with returns a masker that also hides extra values.
func (m *masker) with(extra ...string) *masker {
	c := &masker{values: append([]string(nil), m.values...)}
	for _, v := range extra {
		c.add(v)
	}
	return c
}

// String masks s.
func (m *masker) String(s string) string {
	for _, v := range m.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return secretShapes.ReplaceAllString(s, Redacted)
}

// JSON masks every string (keys included) of a JSON document. Matching on
// decoded strings, not on the encoded text, finds secrets that JSON
// escaping would hide.
func (m *masker) JSON(data []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return []byte(`{"error":"unencodable event data"}`)
	}
	changed := false
	v = m.walk(v, &changed)
	if !changed {
		return data
	}
	out, err := json.Marshal(v)
	if err != nil {
		return []byte(`{"error":"unencodable event data"}`)
	}
	return out
}

func (m *masker) walk(v any, changed *bool) any {
	switch x := v.(type) {
	case string:
		if y := m.String(x); y != x {
			*changed = true
			return y
		}
		return x
	case []any:
		for i := range x {
			x[i] = m.walk(x[i], changed)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			mk := m.String(k)
			if mk != k {
				*changed = true
			}
			out[mk] = m.walk(val, changed)
		}
		return out
	}
	return v
}
