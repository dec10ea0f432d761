package drydock_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

const canary = "canary-value-7f3a9c"

func TestSecretValuesValidate(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", drydock.MaxSecretValueLen+1)
	many := drydock.SecretValues{}
	for i := range drydock.MaxSecrets + 1 {
		many[fmt.Sprintf("S%d", i)] = canary
	}
	tests := []struct {
		name    string
		secrets drydock.SecretValues
		code    string
		want    string // in the message
	}{
		{"ok", drydock.SecretValues{"GITHUB_TOKEN": canary, "_x1": canary}, "", ""},
		{"empty", nil, "", ""},
		{"bad name", drydock.SecretValues{"1ABC": canary}, drydock.EINVALID, `"1ABC" is not a valid name`},
		{"dash", drydock.SecretValues{"A-B": canary}, drydock.EINVALID, "not a valid name"},
		{"blank name", drydock.SecretValues{"": canary}, drydock.EINVALID, "not a valid name"},
		{"PATH", drydock.SecretValues{"PATH": canary}, drydock.EINVALID, "PATH is reserved"},
		{"proxy lower case", drydock.SecretValues{"https_proxy": canary}, drydock.EINVALID, "https_proxy is reserved"},
		{"no_proxy", drydock.SecretValues{"No_Proxy": canary}, drydock.EINVALID, "reserved"},
		{"toolboxd", drydock.SecretValues{"TOOLBOXD_TOKEN": canary}, drydock.EINVALID, "names starting with TOOLBOXD_"},
		{"drydock", drydock.SecretValues{"drydock_x": canary}, drydock.EINVALID, "names starting with DRYDOCK_"},
		{"too short", drydock.SecretValues{"A": "1234567"}, drydock.EINVALID, "too short to be masked reliably"},
		{"too long", drydock.SecretValues{"A": long}, drydock.ETOOLARGE, "the value of A is 4097 bytes"},
		{"NUL", drydock.SecretValues{"A": "abcdefgh\x00"}, drydock.EINVALID, "without NUL"},
		{"bad UTF-8", drydock.SecretValues{"A": "abcdefgh\xff"}, drydock.EINVALID, "valid UTF-8"},
		{"spaces", drydock.SecretValues{"A": " abcdefgh"}, drydock.EINVALID, "white space"},
		{"too many", many, drydock.ETOOLARGE, "the limit is 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := drydock.JobSpec{Task: "t", Secrets: tt.secrets}
			err := spec.Validate()
			if tt.code == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if drydock.ErrorCode(err) != tt.code || !strings.Contains(drydock.ErrorMessage(err), tt.want) {
				t.Fatalf("Validate = %v (%s); want %s containing %q", err, drydock.ErrorCode(err), tt.code, tt.want)
			}
			if !strings.HasPrefix(drydock.ErrorMessage(err), "secrets") {
				t.Errorf("message %q does not name the field", drydock.ErrorMessage(err))
			}
			for _, v := range tt.secrets {
				if len(v) >= 4 && strings.Contains(drydock.ErrorMessage(err), v) {
					t.Errorf("message %q shows the value", drydock.ErrorMessage(err))
				}
			}
		})
	}
}

func TestJobNeverEncodesSecretValues(t *testing.T) {
	t.Parallel()
	j := &drydock.Job{ID: "j1", SecretNames: []string{"A", "B"}, SealedSecrets: []byte(canary),
		JobSpec: drydock.JobSpec{Task: "t", Secrets: drydock.SecretValues{"A": canary, "B": canary + "2"}}}
	for _, v := range []any{j, *j, []*drydock.Job{j}, map[string]any{"job": j}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(canary)) || bytes.Contains(b, []byte(`"secrets"`)) {
			t.Fatalf("encoded job shows its secrets: %s", b)
		}
		if !bytes.Contains(b, []byte(`"secret_names":["A","B"]`)) {
			t.Fatalf("encoded job lacks secret_names: %s", b)
		}
	}
	// The job still decodes as before (the client reads it).
	b, _ := json.Marshal(j)
	var back drydock.Job
	if err := json.Unmarshal(b, &back); err != nil || back.ID != "j1" || back.Task != "t" {
		t.Fatalf("decode: %v %+v", err, back)
	}
	// fmt and slog show names only.
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("job", "secrets", j.Secrets, "job", j)
	for _, s := range []string{fmt.Sprint(j), fmt.Sprintf("%+v", *j), fmt.Sprintf("%#v", j.JobSpec), fmt.Sprintf("%q", j.Secrets), logged.String()} {
		if strings.Contains(s, canary) {
			t.Fatalf("printed job shows a secret: %s", s)
		}
	}
	// A spec on its own is what a client sends: it carries the values.
	b, _ = json.Marshal(j.JobSpec)
	if !bytes.Contains(b, []byte(canary)) {
		t.Fatalf("spec lost its secrets: %s", b)
	}
}

func TestSecretValuesValues(t *testing.T) {
	t.Parallel()
	s := drydock.SecretValues{"A": "abcdefgh", "B": "abcdefghij", "C": "abcdefgh"}
	if got := fmt.Sprint(s.Values()); got != "[abcdefghij abcdefgh]" {
		t.Fatalf("Values = %s", got)
	}
	if got := fmt.Sprint(s.Names()); got != "[A B C]" {
		t.Fatalf("Names = %s", got)
	}
}
