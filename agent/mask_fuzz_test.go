package agent

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// tokenAlphabet is what API keys and tokens are made of; a secret outside
// it (say one holding "[REDACTED]" itself) is not a realistic input.
var tokenAlphabet = regexp.MustCompile(`^[A-Za-z0-9_\-]*[A-Za-z][A-Za-z0-9_\-]*$`)

// FuzzMaskJSON: whatever JSON an event holds and wherever a secret sits in
// it (values, keys, escaped as \uXXXX, split across nothing), the masked
// event is valid JSON and no decoded string of it holds the secret.
func FuzzMaskJSON(f *testing.F) {
	for _, s := range [][2]string{
		{`{"output": "key=SECRET"}`, "sk-canary-0123456789"},
		{`{"SECRET": 1}`, "ddk_canaryvalue123"},
		{`["a", {"b": ["SECRET"]}]`, "hunter2hunter2"},
		{`"SECRET"`, "canary-value-x"},
		{`{"x": "\u0053ECRET"}`, "SECRETSECRET"},
		{`{"x": "SECRETSECRET"}`, "SECRETSECRET"},
		{`{"n": 12345678}`, "abcdefgh"},
		{`{"x": "SECRE" }`, "SECRETSE"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, doc, secret string) {
		if len(secret) < minSecret || !tokenAlphabet.MatchString(secret) {
			return
		}
		// Put the secret into the document wherever it says SECRET.
		doc = strings.ReplaceAll(doc, "SECRET", secret)
		if !json.Valid([]byte(doc)) {
			return
		}
		out := newMasker(nil, secret).JSON([]byte(doc))
		if !json.Valid(out) {
			t.Fatalf("masking %s gave invalid JSON %s", doc, out)
		}
		var v any
		json.Unmarshal(out, &v)
		var leak func(any) bool
		leak = func(v any) bool {
			switch x := v.(type) {
			case string:
				return strings.Contains(x, secret)
			case []any:
				for _, e := range x {
					if leak(e) {
						return true
					}
				}
			case map[string]any:
				for k, e := range x {
					if strings.Contains(k, secret) || leak(e) {
						return true
					}
				}
			}
			return false
		}
		if leak(v) || strings.Contains(string(out), secret) {
			t.Fatalf("secret %q survives masking of %s: %s", secret, doc, out)
		}
	})
}
