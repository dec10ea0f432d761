package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/secretbox"
)

const apiCanary = "api-canary-6f0b2d9e"

func newBox(t testing.TB) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(secretbox.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func withSecrets(box *secretbox.Box) func(*api.Config) {
	return func(c *api.Config) { c.Secrets = box }
}

func TestCreateJobWithSecrets(t *testing.T) {
	t.Parallel()
	box := newBox(t)
	b := setupLive(t, false, withSecrets(box))
	body := `{"task": "use the token", "secrets": {"GITHUB_TOKEN": "` + apiCanary + `", "A_SECOND": "` + apiCanary + `-2"}}`
	resp, data := b.do(t, "POST", "/v1/jobs", b.alice, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, data)
	}
	if bytes.Contains(data, []byte(apiCanary)) || bytes.Contains(data, []byte(`"secrets"`)) {
		t.Fatalf("the answer shows the secrets: %s", data)
	}
	var j drydock.Job
	json.Unmarshal(data, &j)
	if strings.Join(j.SecretNames, ",") != "A_SECOND,GITHUB_TOKEN" {
		t.Fatalf("secret_names = %v", j.SecretNames)
	}
	// Stored sealed, for this job only.
	stored, err := b.store.GetJob(t.Context(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.SealedSecrets) == 0 || bytes.Contains(stored.SealedSecrets, []byte(apiCanary)) {
		t.Fatal("the secrets are not stored sealed")
	}
	vals, err := box.Open(j.ID, stored.SealedSecrets)
	if err != nil || vals["GITHUB_TOKEN"] != apiCanary {
		t.Fatalf("open stored secrets: %v", err)
	}
	// Every way of reading the job shows names, never values.
	for _, path := range []string{"/v1/jobs/" + j.ID, "/status/" + j.ID, "/v1/jobs", "/v1/jobs/" + j.ID + "/events", "/v1/jobs/" + j.ID + "/trajectory"} {
		resp, data := b.do(t, "GET", path, b.alice, "")
		if bytes.Contains(data, []byte(apiCanary)) {
			t.Errorf("GET %s (%d) shows a secret value", path, resp.StatusCode)
		}
		if path == "/v1/jobs/"+j.ID && !bytes.Contains(data, []byte(`"secret_names":["A_SECOND","GITHUB_TOKEN"]`)) {
			t.Errorf("GET %s lacks secret_names: %s", path, data)
		}
	}
}

func TestCreateJobSecretsRefused(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, withSecrets(newBox(t)))
	tests := []struct{ secrets, code, want string }{
		{`{"PATH": "` + apiCanary + `"}`, "invalid", "PATH is reserved"},
		{`{"http_proxy": "` + apiCanary + `"}`, "invalid", "reserved"},
		{`{"DRYDOCK_X": "` + apiCanary + `"}`, "invalid", "DRYDOCK_"},
		{`{"9A": "` + apiCanary + `"}`, "invalid", "not a valid name"},
		{`{"A": "short"}`, "invalid", "too short to be masked reliably"},
		{`{"A": "` + strings.Repeat("x", 4097) + `"}`, "too_large", "limit is 4096"},
		{`{"A": "abc\u0000defghij"}`, "invalid", "without NUL"},
		{`{"A": 12345678}`, "invalid", `field \"secrets\" must be a JSON string`},
		{`["` + apiCanary + `"]`, "invalid", "secrets"},
	}
	for _, tt := range tests {
		resp, data := b.do(t, "POST", "/v1/jobs", b.alice, `{"task": "x", "secrets": `+tt.secrets+`}`)
		if resp.StatusCode/100 != 4 || errorCode(t, data) != tt.code || !strings.Contains(string(data), tt.want) {
			t.Errorf("secrets %.40s: %d %s; want %s containing %q", tt.secrets, resp.StatusCode, data, tt.code, tt.want)
		}
		if bytes.Contains(data, []byte(apiCanary)) {
			t.Errorf("the error answer shows the value: %s", data)
		}
	}
	many := map[string]string{}
	for i := range 33 {
		many[fmt.Sprintf("S%d", i)] = apiCanary
	}
	mb, _ := json.Marshal(map[string]any{"task": "x", "secrets": many})
	if resp, data := b.do(t, "POST", "/v1/jobs", b.alice, string(mb)); resp.StatusCode != 413 || bytes.Contains(data, []byte(apiCanary)) {
		t.Errorf("33 secrets: %d %s", resp.StatusCode, data)
	}

	// A server without a key refuses secrets and names the flag.
	nokey := setupLive(t, false, nil)
	resp, data := nokey.do(t, "POST", "/v1/jobs", nokey.alice, `{"task": "x", "secrets": {"A": "`+apiCanary+`"}}`)
	if resp.StatusCode != 400 || !strings.Contains(string(data), "--secrets-key-file") || bytes.Contains(data, []byte(apiCanary)) {
		t.Errorf("without a key: %d %s", resp.StatusCode, data)
	}
	if resp, data := nokey.do(t, "GET", "/v1/jobs", nokey.alice, ""); bytes.Contains(data, []byte(`"job_id"`)) {
		t.Errorf("a refused job was stored: %d %s", resp.StatusCode, data)
	}
	// Without secrets such a server works as before.
	if resp, data := nokey.do(t, "POST", "/v1/jobs", nokey.alice, `{"task": "x", "secrets": {}}`); resp.StatusCode != 201 {
		t.Errorf("empty secrets without a key: %d %s", resp.StatusCode, data)
	}
}

// A running job's files are read from its sandbox, where they hold the
// plain values: the file API masks them (same length), in names too.
func TestLiveFilesMaskSecrets(t *testing.T) {
	t.Parallel()
	box := newBox(t)
	b := setupLive(t, false, withSecrets(box))
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "env.txt"), []byte("GITHUB_TOKEN="+apiCanary+"\nother\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "x-"+apiCanary), []byte("named"), 0o644)
	big := bytes.Repeat([]byte("y"), 100_000-5)
	big = append(big, apiCanary...)
	os.WriteFile(filepath.Join(ws, "big.txt"), big, 0o644)
	sb := startToolbox(t, "sb-secret-files", ws, nil)
	j := b.runningJob(t, b.alice, `{"task": "x", "secrets": {"GITHUB_TOKEN": "`+apiCanary+`"}}`, sb)
	files := "/v1/jobs/" + j.ID + "/files/"
	stars := strings.Repeat("*", len(apiCanary))

	resp, data := b.get(t, files, b.alice)
	if resp.StatusCode != 200 || bytes.Contains(data, []byte(apiCanary)) || !bytes.Contains(data, []byte("x-"+stars)) {
		t.Errorf("listing: %d %s", resp.StatusCode, data)
	}
	resp, data = b.get(t, files+"env.txt", b.alice)
	if resp.StatusCode != 200 || string(data) != "GITHUB_TOKEN="+stars+"\nother\n" {
		t.Errorf("env.txt: %d %q", resp.StatusCode, data)
	}
	resp, data = b.get(t, files+"big.txt?download=1", b.alice)
	if resp.StatusCode != 200 || len(data) != len(big) || bytes.Contains(data, []byte(apiCanary)) {
		t.Errorf("big.txt: %d, %d bytes", resp.StatusCode, len(data))
	}
	// Secrets this server cannot open (sealed under another key): no
	// live file is shown, since it could not be masked.
	b.finish(t, j.ID, drydock.StatusError, nil)
	id := "0193aaaa-0000-7000-8000-00000000beef"
	sealed, _ := newBox(t).Seal(id, drydock.SecretValues{"GITHUB_TOKEN": apiCanary})
	if err := b.store.CreateJob(t.Context(), &drydock.Job{ID: id, OwnerID: "tok_alice", SecretNames: []string{"GITHUB_TOKEN"}, SealedSecrets: sealed, JobSpec: drydock.JobSpec{Task: "x"}}); err != nil {
		t.Fatal(err)
	}
	if c, err := b.store.ClaimJob(t.Context(), b.owner, time.Minute); err != nil || c == nil || c.ID != id {
		t.Fatalf("claim: %v %v", c, err)
	}
	if err := b.store.UpdateProgress(t.Context(), id, b.owner, drydock.JobProgress{SandboxID: &sb.ID}); err != nil {
		t.Fatal(err)
	}
	resp, data = b.get(t, "/v1/jobs/"+id+"/files/env.txt", b.alice)
	if resp.StatusCode != 503 || bytes.Contains(data, []byte(apiCanary)) || !strings.Contains(string(data), "cannot open") {
		t.Errorf("files under another key: %d %s", resp.StatusCode, data)
	}
}

// A secret value pasted into a message to the job's agent is stored
// masked, like every other output of the job; a server that cannot open the
// job's secrets refuses the message rather than store it unmasked.
func TestMessageMasksTheJobsSecrets(t *testing.T) {
	t.Parallel()
	box := newBox(t)
	b := setupLive(t, false, withSecrets(box))
	j := b.schedule(t, b.alice, `{"task": "x", "secrets": {"GITHUB_TOKEN": "`+apiCanary+`"}}`)
	resp, data := b.do(t, "POST", "/v1/jobs/"+j.ID+"/messages", b.alice, `{"text": "the token is `+apiCanary+`, use it"}`)
	if resp.StatusCode != http.StatusAccepted || bytes.Contains(data, []byte(apiCanary)) {
		t.Fatalf("message: %d %s", resp.StatusCode, data)
	}
	es, err := b.store.ListEvents(t.Context(), j.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var stored int
	for _, e := range es {
		if bytes.Contains(e.Data, []byte(apiCanary)) {
			t.Errorf("event %d (%s) holds the secret: %s", e.Seq, e.Type, e.Data)
		}
		if e.Type == drydock.EventUserMessage && strings.Contains(string(e.Data), "the token is "+strings.Repeat("*", len(apiCanary))) {
			stored++
		}
	}
	if stored != 1 {
		t.Errorf("%d masked messages stored; want 1", stored)
	}

	id := "0193aaaa-0000-7000-8000-00000000cafe"
	sealed, _ := newBox(t).Seal(id, drydock.SecretValues{"GITHUB_TOKEN": apiCanary})
	if err := b.store.CreateJob(t.Context(), &drydock.Job{ID: id, OwnerID: "tok_alice", SecretNames: []string{"GITHUB_TOKEN"}, SealedSecrets: sealed, JobSpec: drydock.JobSpec{Task: "x"}}); err != nil {
		t.Fatal(err)
	}
	resp, data = b.do(t, "POST", "/v1/jobs/"+id+"/messages", b.alice, `{"text": "`+apiCanary+`"}`)
	if resp.StatusCode != 503 || bytes.Contains(data, []byte(apiCanary)) || !strings.Contains(string(data), "cannot mask") {
		t.Errorf("message under another key: %d %s", resp.StatusCode, data)
	}
	if es, _ := b.store.ListEvents(t.Context(), id, 0, 100); len(es) != 1 {
		t.Errorf("the refused message left %d events; want only the creation's", len(es))
	}
}
