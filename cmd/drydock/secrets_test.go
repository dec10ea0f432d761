package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlite"
)

const cliCanary = "cli-canary-4b8e0a1d"

func TestScheduleSendsSecretsFromTheEnvironmentAndFiles(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", cliCanary)
	file := filepath.Join(t.TempDir(), "npm")
	os.WriteFile(file, []byte(cliCanary+"-npm\n"), 0o600)
	srv, newRun := setupFake(t)
	r := newRun()
	if err := r.exec("schedule", "x", "--secret", "GITHUB_TOKEN", "--secret-file", "NPM_TOKEN="+file, "--json"); err != nil {
		t.Fatal(err)
	}
	jobs := srv.Jobs()
	if len(jobs) != 1 {
		t.Fatalf("%d jobs", len(jobs))
	}
	got := srv.Job(jobs[0].ID).Secrets
	if got["GITHUB_TOKEN"] != cliCanary || got["NPM_TOKEN"] != cliCanary+"-npm" || len(got) != 2 {
		t.Fatalf("the server got secrets %v", got.Names())
	}
	if strings.Contains(r.out.String()+r.err.String(), cliCanary) {
		t.Fatalf("the CLI printed a value:\n%s%s", r.out.String(), r.err.String())
	}
	if !strings.Contains(r.out.String(), `"secret_names":["GITHUB_TOKEN","NPM_TOKEN"]`) {
		t.Errorf("the job printed lacks secret_names: %s", r.out.String())
	}
}

func TestScheduleSecretErrors(t *testing.T) {
	t.Setenv("SHORT_ONE", "abc")
	os.Unsetenv("NOT_SET_HERE")
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--secret", "API_KEY=" + cliCanary}, "--secret takes a variable name, not NAME=VALUE"},
		{[]string{"--secret", "NOT_SET_HERE"}, "the environment variable NOT_SET_HERE is not set here"},
		{[]string{"--secret", "SHORT_ONE"}, "too short to be masked reliably"},
		{[]string{"--secret-file", "F=" + missing}, "--secret-file F:"},
		{[]string{"--secret-file", "PATH=" + missing}, "--secret-file PATH:"},
	} {
		srv, newRun := setupFake(t)
		r := newRun()
		err := r.exec(append([]string{"schedule", "x"}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error = %v; want %q", tt.args, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), cliCanary) {
			t.Errorf("%v: the error shows the value", tt.args)
		}
		if n := len(srv.Jobs()); n != 0 {
			t.Errorf("%v: %d jobs created", tt.args, n)
		}
	}
}

func TestSecretFileLimits(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	os.WriteFile(big, []byte(strings.Repeat("x", 10<<20)), 0o600)
	_, err := SecretFlags{SecretFile: map[string]string{"BIG": big}}.values(os.LookupEnv)
	if drydock.ErrorCode(err) != "" {
		t.Fatalf("reading a big file: %v", err)
	}
	spec := drydock.JobSpec{Task: "x"}
	spec.Secrets, _ = SecretFlags{SecretFile: map[string]string{"BIG": big}}.values(os.LookupEnv)
	if err := spec.Validate(); drydock.ErrorCode(err) != drydock.ETOOLARGE {
		t.Fatalf("a big file's value: %v", err)
	}
	if n := len(spec.Secrets["BIG"]); n > drydock.MaxSecretValueLen+3 {
		t.Fatalf("read %d bytes of a 10 MiB file", n)
	}
}

// The key is bound to the store on first use: a lost key file (a new one is
// made in the data directory) or another one is refused, naming the reset;
// the reset adopts it; a reset without a key to adopt is an error.
func TestSecretsKeyBoundToTheStore(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "drydock.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.DiscardHandler)
	if _, err := (SecretsOptions{}).box(t.Context(), st, dir, true, log); err != nil {
		t.Fatalf("first start: %v", err)
	}
	if _, err := (SecretsOptions{}).box(t.Context(), st, dir, true, log); err != nil {
		t.Fatalf("restart with the same key: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "secrets.key")); err != nil {
		t.Fatal(err)
	}
	if _, err := (SecretsOptions{}).box(t.Context(), st, dir, true, log); err == nil || !strings.Contains(err.Error(), "--secrets-key-reset") {
		t.Fatalf("restart after the key file was lost: %v; want a refusal naming --secrets-key-reset", err)
	}
	if _, err := (SecretsOptions{KeyReset: true}).box(t.Context(), st, dir, true, log); err != nil {
		t.Fatalf("reset: %v", err)
	}
	if _, err := (SecretsOptions{}).box(t.Context(), st, dir, true, log); err != nil {
		t.Fatalf("restart after the reset: %v", err)
	}
	if _, err := (SecretsOptions{KeyReset: true}).box(t.Context(), st, dir, false, log); err == nil || !strings.Contains(err.Error(), "--secrets-key-file") {
		t.Errorf("reset without a key file on Postgres: %v", err)
	}
}
