package llm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

func TestCost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model string
		usage Usage
		want  float64
		known bool
	}{
		{"claude-sonnet-4-5-20250929", Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}, 18, true},
		{"claude-sonnet-4-5", Usage{CacheReadTokens: 1_000_000, CacheWriteTokens: 1_000_000}, 0.3 + 3.75, true},
		{"gpt-4o-mini-2024-07-18", Usage{InputTokens: 2_000_000}, 0.3, true},
		{"gpt-4o", Usage{InputTokens: 1_000_000, CacheReadTokens: 1_000_000}, 2.5 + 1.25, true},
		{"gpt-4.1", Usage{CacheWriteTokens: 1_000_000}, 2, true}, // writes cost what input costs
		{"openai/gpt-5-mini", Usage{OutputTokens: 1_000_000}, 2, true},
		{"llama3.1:8b", Usage{InputTokens: 1_000_000}, 0, false},
	}
	for _, tt := range tests {
		got, known := Cost(tt.model, tt.usage)
		if known != tt.known || got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("Cost(%s, %+v) = %v, %v; want %v, %v", tt.model, tt.usage, got, known, tt.want, tt.known)
		}
	}
}

func TestLookupModelLongestPrefix(t *testing.T) {
	t.Parallel()
	m, ok := LookupModel("gpt-4o-mini")
	if !ok || m.Prefix != "gpt-4o-mini" {
		t.Errorf("gpt-4o-mini matched %q", m.Prefix)
	}
	m, ok = LookupModel("claude-opus-4-5-20251101")
	if !ok || m.Input != 5 || !m.Images {
		t.Errorf("claude-opus-4-5 matched %+v", m)
	}
}

func TestAPIErrorMessages(t *testing.T) {
	t.Parallel()
	v := Vendor{Name: "OpenAI", KeyEnv: "OPENAI_API_KEY", BaseURLEnv: "OPENAI_BASE_URL"}
	tests := []struct {
		status   int
		body     string
		code     string
		contains []string
		absent   []string
	}{
		{401, `{"error":{"message":"Incorrect API key provided: sk-abc***xyz"}}`, drydock.EUNAUTHORIZED, []string{"OPENAI_API_KEY", "401"}, []string{"sk-abc"}},
		{400, `{"error":{"message":"This model's maximum context length is 128000 tokens"}}`, drydock.EINVALID, []string{"maximum context length"}, nil},
		{404, `{"error":{"message":"The model 'gpt-9' does not exist"}}`, drydock.EINVALID, []string{"gpt-9", "404"}, nil},
		{429, `{"error":{"message":"Rate limit reached"}}`, drydock.EUNAVAILABLE, []string{"429"}, nil},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, drydock.EUNAVAILABLE, []string{"529", "Overloaded"}, nil},
		{500, `<html>oops sk-proj-abcdefghijklmnop</html>`, drydock.EUNAVAILABLE, []string{"500"}, []string{"sk-proj-abc"}},
	}
	for _, tt := range tests {
		err := v.APIError(tt.status, tt.body, errTest)
		if drydock.ErrorCode(err) != tt.code {
			t.Errorf("%d: code %q; want %q", tt.status, drydock.ErrorCode(err), tt.code)
		}
		msg := drydock.ErrorMessage(err)
		for _, s := range tt.contains {
			if !strings.Contains(msg, s) {
				t.Errorf("%d: message %q lacks %q", tt.status, msg, s)
			}
		}
		for _, s := range tt.absent {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%d: error %q contains %q", tt.status, err, s)
			}
		}
	}
}

var errTest = errors.New("sdk error")

func TestObjectInput(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"a":1}`:   `{"a":1}`,
		``:          `{}`,
		`[1,2]`:     `{"raw_arguments":[1,2]}`,
		`{"a":`:     `{"raw_arguments":"{\"a\":"}`,
		`"just me"`: `{"raw_arguments":"just me"}`,
	} {
		got := ObjectInput(json.RawMessage(in))
		if string(got) != want {
			t.Errorf("ObjectInput(%s) = %s; want %s", in, got, want)
		}
	}
}
