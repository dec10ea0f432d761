package agent

import (
	"strings"
	"testing"
)

func TestMaskerString(t *testing.T) {
	t.Parallel()
	m := newMasker([]string{
		"OPENAI_API_KEY=sk-live-0123456789abcdef",
		"DB_PASSWORD=hunter2hunter2",
		"GITHUB_TOKEN=short", // too short to mask by value
		"HOME=/home/drydock", // not a secret's name
	}, "sandbox-token-abcdef123456")
	tests := []struct{ in, want string }{
		{"key is sk-live-0123456789abcdef.", "key is [REDACTED]."},
		{"psql password=hunter2hunter2", "psql password=[REDACTED]"},
		{"token short stays", "token short stays"},
		{"home is /home/drydock", "home is /home/drydock"},
		{"Bearer sandbox-token-abcdef123456", "Bearer [REDACTED]"},
		{"other key sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAA", "other key [REDACTED]"},
		{"drydock token ddk_0123456789abcdefghij", "drydock token [REDACTED]"},
		{"aws AKIAIOSFODNN7EXAMPLE", "aws [REDACTED]"},
		{"gh ghp_abcdefghijklmnopqrstuvwxyz0123456789", "gh [REDACTED]"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[REDACTED]"},
		{"a task-list is fine", "a task-list is fine"},
	}
	for _, tt := range tests {
		if got := m.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestMaskerJSON(t *testing.T) {
	t.Parallel()
	m := newMasker(nil, `pa"ss\word-123`)
	// The secret is JSON-escaped in the document; it is found all the same,
	// in values and keys, and numbers keep their exact form.
	in := []byte(`{"output":"x pa\"ss\\word-123 y","input":{"pa\"ss\\word-123":1},"n":12345678901234567890}`)
	out := string(m.JSON(in))
	if strings.Contains(out, `ss\\word`) || !strings.Contains(out, `"x [REDACTED] y"`) || !strings.Contains(out, `"[REDACTED]":1`) {
		t.Errorf("JSON = %s", out)
	}
	if !strings.Contains(out, "12345678901234567890") {
		t.Errorf("number lost precision: %s", out)
	}
	clean := []byte(`{"a": "b"}`)
	if got := m.JSON(clean); string(got) != string(clean) {
		t.Errorf("unchanged document was rewritten: %s", got)
	}
}
