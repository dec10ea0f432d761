package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

func TestCreateJobFromARepository(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, withSecrets(newBox(t)))
	body := `{"task": "fix the failing test", "secrets": {"GIT_TOKEN": "` + apiCanary + `"},
		"repo": {"url": " https://git.example.com/team/project.git ", "ref": "release/1.2", "secret": "GIT_TOKEN"}}`
	resp, data := b.do(t, "POST", "/v1/jobs", b.alice, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, data)
	}
	if bytes.Contains(data, []byte(apiCanary)) {
		t.Fatalf("the answer shows the token: %s", data)
	}
	var j drydock.Job
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	want := drydock.RepoSpec{URL: "https://git.example.com/team/project.git", Ref: "release/1.2", Secret: "GIT_TOKEN"}
	if j.Repo == nil || *j.Repo != want {
		t.Fatalf("answer's repo = %+v; want %+v", j.Repo, want)
	}
	// The user's egress list is theirs: the repository's host is allowed
	// beside it, not written into it.
	if len(j.Egress) != 0 {
		t.Fatalf("egress = %v; want the job's own (empty) list", j.Egress)
	}
	_, data = b.do(t, "GET", "/v1/jobs/"+j.ID, b.alice, "")
	if err := json.Unmarshal(data, &j); err != nil || j.Repo == nil || *j.Repo != want {
		t.Fatalf("job read back: %s", data)
	}
}

func TestCreateJobRepoRefused(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, withSecrets(newBox(t)))
	secrets := `"secrets": {"GIT_TOKEN": "` + apiCanary + `"}`
	tests := []struct{ repo, want string }{
		{`{"url": "https://bob:` + apiCanary + `@git.example.com/p.git"}`, "put the token in a job secret"},
		{`{"url": "https://` + apiCanary + `@git.example.com/p.git"}`, "name it in repo.secret"},
		{`{"url": "https://git.example.com/p.git?access_token=` + apiCanary + `"}`, "query"},
		{`{"url": "git@git.example.com:team/p.git"}`, "is not a URL"},
		{`{"url": "ssh://git.example.com/p.git"}`, "https URL"},
		{`{"url": "http://git.example.com/p.git"}`, "plain http"},
		{`{"url": ""}`, "repo.url is required"},
		{`{}`, "repo.url is required"},
		{`{"url": "https://git.example.com/p", "ref": "-oProxyCommand=x"}`, "starts with '-'"},
		{`{"url": "https://git.example.com/p", "ref": "main..dev"}`, "'..'"},
		{`{"url": "https://git.example.com/p", "secret": "GITHUB_TOKEN"}`, `\"GITHUB_TOKEN\", which is not one of the job's secrets (the job has GIT_TOKEN)`},
		{`{"url": "https://git.example.com/p", "token": "` + apiCanary + `"}`, `unknown field \"token\"`},
		{`{"url": "https://git.example.com/p", "URL": "https://evil.example/p"}`, `duplicate key \"URL\" in \"repo\"`},
		{`"https://git.example.com/p"`, `field \"repo\" must be a JSON object`},
		{`{"url": "https://git.example.com/p", "push": {"branch": "main"}}`, `repo.push.branch must start with \"drydock/\"`},
		{`{"url": "https://git.example.com/p", "push": {"branch": "drydock/x", "author": "nobody"}}`, `repo.push.author must be`},
		{`{"url": "https://git.example.com/p", "push": {"branch": "drydock/x", "force": true}}`, `unknown field \"force\"`},
		{`{"url": "https://git.example.com/p", "push": {"branch": "drydock/x", "Branch": "main"}}`, `duplicate key \"Branch\" in \"repo\".\"push\"`},
	}
	for _, tt := range tests {
		resp, data := b.do(t, "POST", "/v1/jobs", b.alice, `{"task": "x", `+secrets+`, "repo": `+tt.repo+`}`)
		if resp.StatusCode != http.StatusBadRequest || errorCode(t, data) != "invalid" || !strings.Contains(string(data), tt.want) {
			t.Errorf("repo %s: %d %s; want 400 invalid containing %q", tt.repo, resp.StatusCode, data, tt.want)
		}
		if bytes.Contains(data, []byte(apiCanary)) {
			t.Errorf("the error answer shows the token: %s", data)
		}
	}
	if _, data := b.do(t, "GET", "/v1/jobs", b.alice, ""); bytes.Contains(data, []byte(`"job_id"`)) {
		t.Errorf("a refused job was stored: %s", data)
	}
}
