package api_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/google/uuid"
)

// finishedJob creates a job through the API as token, archives a
// workspace holding files for it and finishes it with status, as a runner
// would.
func (b *bundle) finishedJob(t *testing.T, token, body string, files map[string]string, status drydock.JobStatus) (*drydock.Job, []byte) {
	t.Helper()
	job := b.schedule(t, token, body)
	claimed, err := b.store.ClaimJob(t.Context(), "w", time.Minute)
	if err != nil || claimed == nil || claimed.ID != job.ID {
		t.Fatalf("claim %s: %v %v", job.ID, claimed, err)
	}
	var archive []byte
	if files != nil {
		archive = workspaceArchive(t, files)
		key := job.ID + ".tar.gz"
		n, err := b.artifacts.Put(t.Context(), key, bytes.NewReader(archive))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.store.SetArtifact(t.Context(), job.ID, key, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.store.FinishJob(t.Context(), job.ID, "w", drydock.JobResult{Status: status}); err != nil {
		t.Fatal(err)
	}
	return job, archive
}

// workspaceArchive is a tar.gz of regular files.
func workspaceArchive(t *testing.T, files map[string]string) []byte {
	t.Helper()
	names := slices.Sorted(maps.Keys(files))
	entries := make([]tarEntry, 0, len(names))
	for _, n := range names {
		entries = append(entries, tarEntry{name: n, body: files[n], typ: tar.TypeReg})
	}
	return tarGz(t, entries)
}

// followUp posts a message to a finished job and decodes the 201 answer.
func (b *bundle) followUp(t *testing.T, token, id, body string) (*drydock.Job, *http.Response) {
	t.Helper()
	resp, data := b.do(t, "POST", "/v1/jobs/"+id+"/messages", token, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("follow-up of %s: %d %s", id, resp.StatusCode, data)
	}
	var j drydock.Job
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	return &j, resp
}

// A message to a finished job creates a job that continues it: it names
// its parent, takes the message as its task, inherits what the parent
// asked for (but its budgets), and starts from a copy of the parent's
// archive; the parent lists its follow-ups, oldest first.
func TestFollowUpOfFinishedJob(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	parent, archive := b.finishedJob(t, b.alice, `{"task": "build a todo app", "model": "gpt-x", "profile": "desktop", "egress": ["registry.npm.example.com"],
		"context_budget": 32000, "metadata": {"team": "web"}, "max_steps": 7, "timeout": "10m"}`, map[string]string{"app.js": "todo\n"}, drydock.StatusComplete)

	child, resp := b.followUp(t, b.alice, parent.ID, `{"text": "  now add dark mode\n"}`)
	if child.ParentJobID != parent.ID || child.Status != drydock.StatusPending || child.ID == parent.ID {
		t.Fatalf("follow-up = %+v; want a pending job with parent_job_id %s", child, parent.ID)
	}
	if loc := resp.Header.Get("Location"); !strings.HasSuffix(loc, "/status/"+child.ID) {
		t.Errorf("Location = %q; want the follow-up's status", loc)
	}
	if child.Task != "now add dark mode" {
		t.Errorf("task = %q; want the message", child.Task)
	}
	if child.Model != "gpt-x" || child.Profile != drydock.ProfileDesktop || child.ContextBudget != 32000 ||
		!slices.Equal(child.Egress, []string{"registry.npm.example.com"}) || child.EgressSource != drydock.EgressFromJob || child.Metadata["team"] != "web" {
		t.Errorf("follow-up did not inherit the parent's model, profile, budget, egress, metadata: %+v", child)
	}
	if child.MaxSteps != 0 || child.Timeout != 0 {
		t.Errorf("follow-up inherited the parent's budgets (max_steps %d, timeout %v); each job gets its own", child.MaxSteps, child.Timeout)
	}
	stored, err := b.store.GetJob(t.Context(), child.ID)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := b.artifacts.Get(t.Context(), stored.InputKey)
	if err != nil {
		t.Fatalf("the follow-up's input %q: %v", stored.InputKey, err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, archive) || stored.InputKey == parent.ID+".tar.gz" {
		t.Errorf("the follow-up's input is not a copy of the parent's archive (key %q, %d bytes)", stored.InputKey, len(got))
	}
	if b.queue.notified == 0 {
		t.Error("the runner was not woken")
	}

	second, _ := b.followUp(t, b.alice, parent.ID, `{"text": "and a footer", "model": "gpt-y", "metadata": {}, "egress": [], "max_steps": 3}`)
	if second.Model != "gpt-y" || len(second.Metadata) != 0 || len(second.Egress) != 0 || second.MaxSteps != 3 || second.Profile != drydock.ProfileDesktop {
		t.Errorf("overrides not applied: %+v", second)
	}
	p := b.getJob(t, b.alice, parent.ID)
	if !slices.Equal(p.FollowUps, []string{child.ID, second.ID}) || p.ParentJobID != "" {
		t.Errorf("parent's follow_ups = %v (parent_job_id %q); want [%s %s]", p.FollowUps, p.ParentJobID, child.ID, second.ID)
	}
	if c := b.getJob(t, b.alice, child.ID); c.ParentJobID != parent.ID || len(c.FollowUps) != 0 {
		t.Errorf("child reads back parent_job_id %q, follow_ups %v", c.ParentJobID, c.FollowUps)
	}
	// A job without follow-ups keeps the JSON it always had.
	_, data := b.do(t, "GET", "/status/"+child.ID, b.alice, "")
	if bytes.Contains(data, []byte(`"follow_ups"`)) {
		t.Errorf("a job without follow-ups shows the field: %s", data)
	}
	_, data = b.do(t, "GET", "/status/"+parent.ID, b.alice, "")
	if bytes.Contains(data, []byte(`"parent_job_id"`)) {
		t.Errorf("a job that started afresh shows parent_job_id: %s", data)
	}
}

// Follow-ups of errored and cancelled jobs work too, and a follow-up of
// a follow-up names its own parent.
func TestFollowUpOfFollowUp(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	for _, st := range []drydock.JobStatus{drydock.StatusError, drydock.StatusCancelled} {
		parent, _ := b.finishedJob(t, "", `{"task": "x"}`, map[string]string{"a": "1"}, st)
		child, _ := b.followUp(t, "", parent.ID, `{"text": "go on"}`)
		if child.ParentJobID != parent.ID {
			t.Fatalf("follow-up of a %s job: parent %q", st, child.ParentJobID)
		}
		claimed, err := b.store.ClaimJob(t.Context(), "w", time.Minute)
		if err != nil || claimed.ID != child.ID {
			t.Fatalf("claim the follow-up: %v %v", claimed, err)
		}
		key := child.ID + ".tar.gz"
		n, _ := b.artifacts.Put(t.Context(), key, bytes.NewReader(workspaceArchive(t, map[string]string{"b": "2"})))
		b.store.SetArtifact(t.Context(), child.ID, key, n)
		b.store.FinishJob(t.Context(), child.ID, "w", drydock.JobResult{Status: drydock.StatusComplete})
		grandchild, _ := b.followUp(t, "", child.ID, `{"text": "once more"}`)
		if grandchild.ParentJobID != child.ID {
			t.Fatalf("follow-up of a follow-up: parent %q; want %s", grandchild.ParentJobID, child.ID)
		}
		b.store.CancelJob(t.Context(), grandchild.ID) // out of the next claim's way
	}
}

// Every refusal says why with the right status and stores nothing: no
// job and no copy of an archive.
func TestFollowUpRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	done, _ := b.finishedJob(t, b.alice, `{"task": "x"}`, map[string]string{"a": "1"}, drydock.StatusComplete)
	noArchive, _ := b.finishedJob(t, b.alice, `{"task": "x"}`, nil, drydock.StatusError)
	gone, _ := b.finishedJob(t, b.alice, `{"task": "x"}`, map[string]string{"a": "1"}, drydock.StatusComplete)
	if err := b.artifacts.Delete(t.Context(), gone.ID+".tar.gz"); err != nil {
		t.Fatal(err)
	}
	pending := b.schedule(t, b.alice, `{"task": "still waiting"}`)
	before := b.countJobs(t)
	long := strings.Repeat("a", drydock.MaxMessageBytes+1)
	for _, tc := range []struct {
		name, token, id, body string
		status                int
		want                  string
	}{
		{"unknown job", b.alice, "0190b7a2-5f8e-7c3b-9a1d-2f4e6b8c0d1e", `{"text": "hi"}`, 404, "not found"},
		{"not a job id", b.alice, "nope", `{"text": "hi"}`, 404, "not found"},
		{"another user's job", b.bob, done.ID, `{"text": "hi"}`, 404, "not found"},
		{"no token", "", done.ID, `{"text": "hi"}`, 401, ""},
		{"no text", b.alice, done.ID, `{"model": "gpt-x"}`, 400, "text is required"},
		{"blank text", b.alice, done.ID, `{"text": " \n\t"}`, 400, "blank"},
		{"text over the limit", b.alice, done.ID, `{"text": "` + long + `"}`, 413, "limit"},
		{"NUL in text", b.alice, done.ID, `{"text": "a\u0000b"}`, 400, "NUL"},
		{"task instead of text", b.alice, done.ID, `{"text": "a", "task": "b"}`, 400, `give \"text\", not \"task\"`},
		{"repo", b.alice, done.ID, `{"text": "a", "repo": {"url": "https://example.com/r.git"}}`, 400, `cannot take \"repo\"`},
		{"unknown field", b.alice, done.ID, `{"text": "a", "colour": "red"}`, 400, "unknown field"},
		{"bad override", b.alice, done.ID, `{"text": "a", "profile": "gpu"}`, 400, "profile"},
		{"bad egress", b.alice, done.ID, `{"text": "a", "egress": ["http://x"]}`, 400, "egress"},
		{"duplicate key", b.alice, done.ID, `{"text": "a", "text": "b"}`, 400, "duplicate"},
		{"not JSON", b.alice, done.ID, `text=a`, 400, "malformed"},
		{"empty body", b.alice, done.ID, ``, 400, "empty"},
		{"follow-up fields to a pending job", b.alice, pending.ID, `{"text": "a", "model": "m2"}`, 400, "model"},
		{"never archived", b.alice, noArchive.ID, `{"text": "a"}`, 409, "has no archived workspace"},
		{"archive gone", b.alice, gone.ID, `{"text": "a"}`, 409, "no longer in the artifact store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := b.do(t, "POST", "/v1/jobs/"+tc.id+"/messages", tc.token, tc.body)
			if resp.StatusCode != tc.status || !strings.Contains(string(data), tc.want) {
				t.Errorf("%d %s; want %d with %q", resp.StatusCode, data, tc.status, tc.want)
			}
			errorCode(t, data)
		})
	}
	if after := b.countJobs(t); after != before {
		t.Errorf("refused follow-ups stored %d jobs", after-before)
	}
	if inputs := b.inputs(t); len(inputs) != 0 {
		t.Errorf("refused follow-ups left archives behind: %v", inputs)
	}
}

// A multipart body (an upload) is no follow-up: the route takes JSON.
func TestFollowUpTakesNoUpload(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	done, _ := b.finishedJob(t, "", `{"task": "x"}`, map[string]string{"a": "1"}, drydock.StatusComplete)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", b.url+"/v1/jobs/"+done.ID+"/messages", strings.NewReader("--x\r\n\r\n--x--\r\n"))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("multipart follow-up: %d; want 415", resp.StatusCode)
	}
}

// The parent's secret values were erased when it ended: a follow-up must
// give them again, or say it goes without; the refusal names them and no
// answer shows a value.
func TestFollowUpSecrets(t *testing.T) {
	t.Parallel()
	lb := setupLive(t, true, withSecrets(newBox(t)))
	b := lb.bundle
	parent, _ := b.finishedJob(t, "", `{"task": "x", "secrets": {"API_KEY": "`+apiCanary+`", "DB_URL": "`+apiCanary+`-2"}}`, map[string]string{"a": "1"}, drydock.StatusComplete)
	before := b.countJobs(t)
	resp, data := b.do(t, "POST", "/v1/jobs/"+parent.ID+"/messages", "", `{"text": "go on"}`)
	if resp.StatusCode != 400 || !strings.Contains(string(data), "API_KEY, DB_URL") || !strings.Contains(string(data), "erased") {
		t.Fatalf("follow-up without the parent's secrets: %d %s; want 400 naming them", resp.StatusCode, data)
	}
	if b.countJobs(t) != before || len(b.inputs(t)) != 0 {
		t.Fatal("a refused follow-up stored something")
	}
	without, _ := b.followUp(t, "", parent.ID, `{"text": "go on", "secrets": {}}`)
	if len(without.SecretNames) != 0 {
		t.Errorf(`"secrets": {} gave the follow-up secrets %v`, without.SecretNames)
	}
	with, _ := b.followUp(t, "", parent.ID, `{"text": "go on", "secrets": {"API_KEY": "`+apiCanary+`-3"}}`)
	if !slices.Equal(with.SecretNames, []string{"API_KEY"}) {
		t.Errorf("secret_names = %v; want [API_KEY]", with.SecretNames)
	}
	stored, err := b.store.GetJob(t.Context(), with.ID)
	if err != nil || len(stored.SealedSecrets) == 0 || bytes.Contains(stored.SealedSecrets, []byte(apiCanary)) {
		t.Fatalf("the follow-up's secrets are not stored sealed: %v", err)
	}
	_, data = b.do(t, "GET", "/v1/jobs/"+with.ID, "", "")
	if bytes.Contains(data, []byte(apiCanary)) {
		t.Fatalf("the answer shows a secret: %s", data)
	}
}

// A finished job keeps its secrets for the server's follow-up window: a
// follow-up that gives none inherits them (sealed again for the new job,
// never shown), one that gives some replaces the set; once the window has
// passed, or the keys differ, they must be given again.
func TestFollowUpInheritsKeptSecrets(t *testing.T) {
	t.Parallel()
	box := newBox(t)
	lb := setupLive(t, true, func(c *api.Config) { c.Secrets, c.FollowUpSecrets = box, time.Hour })
	b := lb.bundle
	job := b.schedule(t, "", `{"task": "x", "secrets": {"API_KEY": "`+apiCanary+`", "DB_URL": "`+apiCanary+`-2"}}`)
	if _, err := b.store.ClaimJob(t.Context(), "w", time.Minute); err != nil {
		t.Fatal(err)
	}
	n, err := b.artifacts.Put(t.Context(), job.ID+".tar.gz", bytes.NewReader(workspaceArchive(t, map[string]string{"a": "1"})))
	if err != nil {
		t.Fatal(err)
	}
	b.store.SetArtifact(t.Context(), job.ID, job.ID+".tar.gz", n)
	if err := b.store.FinishJob(t.Context(), job.ID, "w", drydock.JobResult{Status: drydock.StatusComplete, KeepSecrets: true}); err != nil {
		t.Fatal(err)
	}
	child, _ := b.followUp(t, "", job.ID, `{"text": "go on"}`)
	if !slices.Equal(child.SecretNames, []string{"API_KEY", "DB_URL"}) {
		t.Fatalf("inherited secret_names = %v; want the parent's", child.SecretNames)
	}
	stored, err := b.store.GetJob(t.Context(), child.ID)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := box.Open(child.ID, stored.SealedSecrets)
	if err != nil || vals["API_KEY"] != apiCanary || vals["DB_URL"] != apiCanary+"-2" {
		t.Fatalf("the follow-up's sealed secrets open to %d values (%v); want the parent's", len(vals), err)
	}
	_, data := b.do(t, "GET", "/v1/jobs/"+child.ID, "", "")
	if bytes.Contains(data, []byte(apiCanary)) {
		t.Fatalf("the answer shows a secret: %s", data)
	}
	replaced, _ := b.followUp(t, "", job.ID, `{"text": "go on", "secrets": {"OTHER": "other-value-1"}}`)
	if !slices.Equal(replaced.SecretNames, []string{"OTHER"}) {
		t.Errorf("given secrets did not replace the set: %v", replaced.SecretNames)
	}

	// With inherited secrets egress may narrow but not widen.
	job2 := b.schedule(t, "", `{"task": "x", "egress": ["a.example.com", "b.example.com"], "secrets": {"API_KEY": "`+apiCanary+`"}}`)
	for { // the follow-ups above are pending before it
		c, err := b.store.ClaimJob(t.Context(), "w", time.Minute)
		if err != nil || c == nil {
			t.Fatalf("claim: %v %v", c, err)
		}
		if c.ID == job2.ID {
			break
		}
	}
	n, _ = b.artifacts.Put(t.Context(), job2.ID+".tar.gz", bytes.NewReader(workspaceArchive(t, map[string]string{"a": "1"})))
	b.store.SetArtifact(t.Context(), job2.ID, job2.ID+".tar.gz", n)
	if err := b.store.FinishJob(t.Context(), job2.ID, "w", drydock.JobResult{Status: drydock.StatusComplete, KeepSecrets: true}); err != nil {
		t.Fatal(err)
	}
	before := b.countJobs(t)
	resp, data := b.do(t, "POST", "/v1/jobs/"+job2.ID+"/messages", "", `{"text": "go on", "egress": ["a.example.com", "evil.example.net"]}`)
	if resp.StatusCode != 400 || !strings.Contains(string(data), "evil.example.net") || b.countJobs(t) != before {
		t.Errorf("widening egress with inherited secrets: %d %s; want 400 naming the entry, nothing stored", resp.StatusCode, data)
	}
	narrow, _ := b.followUp(t, "", job2.ID, `{"text": "go on", "egress": ["b.example.com"]}`)
	if !slices.Equal(narrow.Egress, []string{"b.example.com"}) || !slices.Equal(narrow.SecretNames, []string{"API_KEY"}) {
		t.Errorf("narrowed follow-up: egress %v, secrets %v", narrow.Egress, narrow.SecretNames)
	}
	wide, _ := b.followUp(t, "", job2.ID, `{"text": "go on", "egress": ["evil.example.net"], "secrets": {}}`)
	if !slices.Equal(wide.Egress, []string{"evil.example.net"}) || len(wide.SecretNames) != 0 {
		t.Errorf("a follow-up without secrets may widen: egress %v, secrets %v", wide.Egress, wide.SecretNames)
	}

	// Past the window (the reaper erases them; until then the API does
	// not use them either).
	late := setupLive(t, true, func(c *api.Config) { c.Secrets, c.FollowUpSecrets = box, time.Nanosecond })
	parent, _ := late.bundle.finishedJob(t, "", `{"task": "x", "secrets": {"API_KEY": "`+apiCanary+`"}}`, map[string]string{"a": "1"}, drydock.StatusComplete)
	resp, data = late.bundle.do(t, "POST", "/v1/jobs/"+parent.ID+"/messages", "", `{"text": "go on"}`)
	if resp.StatusCode != 400 || !strings.Contains(string(data), "API_KEY") || !strings.Contains(string(data), "--follow-up-secrets") {
		t.Errorf("follow-up past the window: %d %s; want 400 naming the secret and the window", resp.StatusCode, data)
	}
}

// A retried follow-up under one Idempotency-Key creates one job; another
// message, or the same one to another job, under that key is refused.
func TestFollowUpIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	parent, _ := b.finishedJob(t, "", `{"task": "x"}`, map[string]string{"a": "1"}, drydock.StatusComplete)
	other, _ := b.finishedJob(t, "", `{"task": "y"}`, map[string]string{"a": "1"}, drydock.StatusComplete)
	post := func(id, body string) (*http.Response, []byte) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", b.url+"/v1/jobs/"+id+"/messages", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "retry-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, data
	}
	r1, d1 := post(parent.ID, `{"text": "go on"}`)
	r2, d2 := post(parent.ID, `{"text": "go on"}`)
	var j1, j2 drydock.Job
	json.Unmarshal(d1, &j1)
	json.Unmarshal(d2, &j2)
	if r1.StatusCode != 201 || r2.StatusCode != 201 || j1.ID == "" || j1.ID != j2.ID || r2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %s / %d %s; want one job, the second answer replayed", r1.StatusCode, d1, r2.StatusCode, d2)
	}
	if j1.ParentJobID != parent.ID {
		t.Errorf("idempotent follow-up stored with parent %q", j1.ParentJobID)
	}
	if inputs := b.inputs(t); len(inputs) != 1 {
		t.Errorf("a replayed follow-up left its copy of the archive: %v", inputs)
	}
	if r, d := post(parent.ID, `{"text": "something else"}`); r.StatusCode != 422 {
		t.Errorf("another message under the key: %d %s; want 422", r.StatusCode, d)
	}
	if r, d := post(other.ID, `{"text": "go on"}`); r.StatusCode != 422 {
		t.Errorf("the same message to another job under the key: %d %s; want 422", r.StatusCode, d)
	}
}

// A chain of follow-ups is bounded, since the runner loads every
// ancestor's conversation.
func TestFollowUpChainBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	parent := ""
	var last string
	for i := range drydock.MaxFollowUpDepth {
		j := &drydock.Job{ID: uuid.Must(uuid.NewV7()).String(), JobSpec: drydock.JobSpec{Task: "t", Profile: drydock.ProfileHeadless}, ParentJobID: parent, OwnerID: "local"}
		if err := b.store.CreateJob(t.Context(), j); err != nil {
			t.Fatal(err)
		}
		if _, err := b.store.ClaimJob(t.Context(), "w", time.Minute); err != nil {
			t.Fatal(err)
		}
		key := j.ID + ".tar.gz"
		n, _ := b.artifacts.Put(t.Context(), key, bytes.NewReader(workspaceArchive(t, map[string]string{"a": "1"})))
		b.store.SetArtifact(t.Context(), j.ID, key, n)
		if err := b.store.FinishJob(t.Context(), j.ID, "w", drydock.JobResult{Status: drydock.StatusComplete}); err != nil {
			t.Fatal(err)
		}
		parent, last = j.ID, j.ID
		if i == drydock.MaxFollowUpDepth-2 {
			// One short of the bound: a follow-up is still taken.
			c, _ := b.followUp(t, "", j.ID, `{"text": "go on"}`)
			if c.ParentJobID != j.ID {
				t.Fatal("follow-up one short of the bound refused")
			}
			b.store.CancelJob(t.Context(), c.ID) // out of the next claim's way
		}
	}
	resp, data := b.do(t, "POST", "/v1/jobs/"+last+"/messages", "", `{"text": "go on"}`)
	if resp.StatusCode != 409 || !strings.Contains(string(data), "at most") {
		t.Fatalf("follow-up past the bound: %d %s; want 409", resp.StatusCode, data)
	}
}

func (b *bundle) countJobs(t *testing.T) int {
	t.Helper()
	jobs, _, err := b.store.ListJobs(t.Context(), drydock.JobFilter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return len(jobs)
}

// inputs lists the job inputs (copies of archives) the artifact store
// holds.
func (b *bundle) inputs(t *testing.T) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(b.artDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".input.tar.gz") {
			found = append(found, filepath.Base(p))
		}
		return nil
	})
	return found
}

// An inherited egress list is held to the server's ceiling as it is now:
// a list the operator no longer allows is refused, saying where it came
// from, and a follow-up that gives a list within the ceiling is taken.
func TestFollowUpEgressWithinTheCeiling(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	parent, _ := b.finishedJob(t, b.alice, `{"task": "x", "egress": ["registry.npm.example.com:443", "pypi.example.com:443"]}`, map[string]string{"a": "1"}, drydock.StatusComplete)
	withEgressPolicy(t, b, nil, []string{"pypi.example.com"})
	resp, data := b.do(t, "POST", "/v1/jobs/"+parent.ID+"/messages", b.alice, `{"text": "go on"}`)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), "registry.npm.example.com") || !strings.Contains(string(data), "inherited from job "+parent.ID) {
		t.Fatalf("inherited list outside the ceiling: %d %s; want 403 naming the entry and the parent", resp.StatusCode, data)
	}
	child, _ := b.followUp(t, b.alice, parent.ID, `{"text": "go on", "egress": ["pypi.example.com:443"]}`)
	if !slices.Equal(child.Egress, []string{"pypi.example.com:443"}) || child.EgressSource != drydock.EgressFromJob {
		t.Errorf("follow-up egress %v (%s); want its own list", child.Egress, child.EgressSource)
	}
}

// Copying a parent's archive takes one of the slots uploads take: while
// they are all held, a follow-up is 429 and stores nothing.
func TestFollowUpWaitsForAnUploadSlot(t *testing.T) {
	t.Parallel()
	b := setupUploadConfig(t, api.Config{MaxUploads: 1})
	parent := &drydock.Job{ID: uuid.Must(uuid.NewV7()).String(), OwnerID: "local", JobSpec: drydock.JobSpec{Task: "x", Profile: drydock.ProfileHeadless}}
	if err := b.store.CreateJob(t.Context(), parent); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.ClaimJob(t.Context(), "w", time.Minute); err != nil {
		t.Fatal(err)
	}
	n, _ := b.arts.Put(t.Context(), parent.ID+".tar.gz", bytes.NewReader(workspaceArchive(t, map[string]string{"a": "1"})))
	b.store.SetArtifact(t.Context(), parent.ID, parent.ID+".tar.gz", n)
	if err := b.store.FinishJob(t.Context(), parent.ID, "w", drydock.JobResult{Status: drydock.StatusComplete}); err != nil {
		t.Fatal(err)
	}
	followUp := func() (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", b.url+"/v1/jobs/"+parent.ID+"/messages", strings.NewReader(`{"text": "go on"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}

	// An upload holds the only slot while it reads its body.
	ct, full := multipartBody(t, ws(tarOf(t, file("a.txt", "x")))...)
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", b.url+"/schedule", pr)
	req.Header.Set("Content-Type", ct)
	first := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	data := full.Bytes()
	pw.Write(data[:len(data)/2])
	refused, early := false, 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !refused; time.Sleep(5 * time.Millisecond) {
		code, body := followUp()
		switch code {
		case http.StatusTooManyRequests:
			refused = strings.Contains(body, "workspaces already")
		case http.StatusCreated:
			// The upload has not reached the server yet (a loaded
			// machine), so this follow-up had the slot to itself. Only a
			// 429 shows the slot held.
			early++
			t.Logf("a follow-up went through before the upload took the slot: %s", body)
		}
	}
	if !refused {
		t.Fatal("no 429 while the only slot was held")
	}
	if got, err := b.store.FollowUps(t.Context(), parent.ID, ""); err != nil || len(got) != early {
		t.Fatalf("a refused follow-up was stored: %d stored, %d created before the slot was held (%v)", len(got), early, err)
	}
	pw.Write(data[len(data)/2:])
	pw.Close()
	if code := <-first; code != http.StatusCreated {
		t.Fatalf("the upload: %d", code)
	}
	if code, body := followUp(); code != http.StatusCreated {
		t.Fatalf("a follow-up once the slot was freed: %d %s", code, body)
	}
}

// An admin may follow up a user's job; the user, who cannot open the
// admin's job, is not shown its id among the follow-ups.
func TestFollowUpsListOnlyTheCallersJobs(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	parent, _ := b.finishedJob(t, b.alice, `{"task": "build it"}`, map[string]string{"a.txt": "a\n"}, drydock.StatusComplete)
	mine, _ := b.followUp(t, b.alice, parent.ID, `{"text": "mine"}`)
	theirs, _ := b.followUp(t, b.admin, parent.ID, `{"text": "the admin's"}`)
	for _, c := range []struct {
		who, token string
		want       []string
	}{{"alice", b.alice, []string{mine.ID}}, {"admin", b.admin, []string{mine.ID, theirs.ID}}} {
		_, data := b.do(t, "GET", "/v1/jobs/"+parent.ID, c.token, "")
		var j drydock.Job
		if err := json.Unmarshal(data, &j); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(j.FollowUps, c.want) {
			t.Errorf("%s sees follow_ups %v; want %v", c.who, j.FollowUps, c.want)
		}
	}
}

// A follow-up with "agent": "none" holds the parent's finished workspace
// in a fresh sandbox for its caller (what drydock eval runs a task's check
// in): it starts from a copy of the parent's archive like any follow-up,
// and the parent's ask_user does not carry over to a job nobody asks from.
func TestFollowUpHeldForTheCaller(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	parent, archive := b.finishedJob(t, b.alice, `{"task": "fix the test", "interactive": true, "metadata": {"eval_run": "r1"}}`,
		map[string]string{"app.py": "fixed\n"}, drydock.StatusComplete)

	held, _ := b.followUp(t, b.alice, parent.ID, `{"text": "check: pytest -q", "agent": "none", "egress": [], "timeout": "10m"}`)
	if held.Agent != drydock.AgentNone || held.Interactive || held.ParentJobID != parent.ID || held.Metadata["eval_run"] != "r1" {
		t.Fatalf("held follow-up = %+v; want agent none, not interactive, the parent's metadata", held)
	}
	stored, err := b.store.GetJob(t.Context(), held.ID)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := b.artifacts.Get(t.Context(), stored.InputKey)
	if err != nil {
		t.Fatalf("the held follow-up's input %q: %v", stored.InputKey, err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, archive) {
		t.Error("the held follow-up does not start from a copy of the parent's archive")
	}
	// Without "agent" a follow-up has the server's agent, as before.
	if child, _ := b.followUp(t, b.alice, parent.ID, `{"text": "go on"}`); child.Agent != "" || !child.Interactive {
		t.Errorf("follow-up without agent = agent %q, interactive %v; want the server's agent and the parent's interactive", child.Agent, child.Interactive)
	}
	for _, body := range []string{`{"text": "x", "agent": "claude"}`, `{"text": "x", "agent": "none", "interactive": true}`} {
		resp, data := b.do(t, "POST", "/v1/jobs/"+parent.ID+"/messages", b.alice, body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(data), "agent") {
			t.Errorf("%s: %d %s; want 400 naming agent", body, resp.StatusCode, data)
		}
	}
}
