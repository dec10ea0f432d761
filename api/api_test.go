package api_test

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/watch"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

type queue struct {
	mu        sync.Mutex
	notified  int
	cancelled []string
}

func (q *queue) Notify() { q.mu.Lock(); q.notified++; q.mu.Unlock() }
func (q *queue) Cancel(id string) {
	q.mu.Lock()
	q.cancelled = append(q.cancelled, id)
	q.mu.Unlock()
}

type bundle struct {
	url       string
	srv       *api.Server
	store     *watch.Store
	artifacts *local.Store
	artDir    string // the artifacts' directory
	queue     *queue
	alice     string // user token
	bob       string // user token
	admin     string
}

func setup(t testing.TB, dev bool) *bundle {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := local.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{store: watch.Wrap(st), artifacts: arts, artDir: filepath.Join(dir, "artifacts"), queue: &queue{}}
	mk := func(id string, admin bool) string {
		secret, hash := drydock.NewTokenSecret()
		if err := st.CreateToken(t.Context(), &drydock.Token{ID: id, Name: id, Admin: admin, CreatedAt: time.Now(), Hash: hash}); err != nil {
			t.Fatal(err)
		}
		return secret
	}
	if !dev {
		b.alice, b.bob, b.admin = mk("tok_alice", false), mk("tok_bob", false), mk("tok_admin", true)
	}
	b.srv = api.New(api.Config{DevMode: dev, SSEPoll: 50 * time.Millisecond}, b.store, b.queue, arts, prometheus.NewRegistry(), nil)
	hs := httptest.NewServer(b.srv)
	t.Cleanup(hs.Close)
	b.url = hs.URL
	return b
}

func (b *bundle) do(t *testing.T, method, path, token, body string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, b.url+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

func (b *bundle) schedule(t *testing.T, token, body string) *drydock.Job {
	t.Helper()
	resp, data := b.do(t, "POST", "/schedule", token, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("schedule: %d %s", resp.StatusCode, data)
	}
	var j drydock.Job
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	return &j
}

func errorCode(t *testing.T, data []byte) string {
	t.Helper()
	var e drydock.ErrorBody
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("error body is not JSON: %q", data)
	}
	if e.Error.Message == "" {
		t.Errorf("error without message: %s", data)
	}
	return e.Error.Code
}

func TestScheduleAndStatus(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	for _, tc := range []struct{ path, body string }{
		{"/schedule", `{"task": "Build me a todo app"}`},
		{"/schedule", `{"prompt": "Build me a todo app"}`},
		{"/submit", `{"task": "Build me a todo app", "prompt": "Build me a todo app"}`},
		{"/v1/jobs", `{"task": "  Build me a todo app\n", "model": "gpt-x", "max_steps": 5, "timeout": "90s", "profile": "desktop", "metadata": {"team": "web"}}`},
	} {
		resp, data := b.do(t, "POST", tc.path, "", tc.body)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s %s: %d %s", tc.path, tc.body, resp.StatusCode, data)
		}
		var created map[string]any
		json.Unmarshal(data, &created)
		id, _ := created["job_id"].(string)
		for _, k := range []string{"job_id", "status_url", "events_url"} {
			if created[k] == "" || created[k] == nil {
				t.Errorf("%s: answer lacks %s: %s", tc.path, k, data)
			}
		}
		if resp.Header.Get("Location") != created["status_url"] {
			t.Errorf("Location = %q", resp.Header.Get("Location"))
		}
		resp, data = b.do(t, "GET", "/status/"+id, "", "")
		if resp.StatusCode != 200 {
			t.Fatalf("status: %d %s", resp.StatusCode, data)
		}
		var st map[string]any
		json.Unmarshal(data, &st)
		for _, k := range []string{"job_id", "status", "created_at", "started_at", "finished_at", "error", "steps", "usage"} {
			if _, ok := st[k]; !ok {
				t.Errorf("status lacks %q: %s", k, data)
			}
		}
		if st["status"] != "pending" || st["task"] != "Build me a todo app" {
			t.Errorf("status = %s", data)
		}
		if _, ok := st["download_url"]; ok {
			t.Errorf("download_url before archive: %s", data)
		}
	}
	var j drydock.Job
	_, data := b.do(t, "GET", "/v1/jobs?limit=1", "", "")
	var page api.JobPage
	json.Unmarshal(data, &page)
	j = *page.Jobs[0]
	if j.Profile != drydock.ProfileDesktop || j.VNCURL == "" || time.Duration(j.Timeout) != 90*time.Second || j.MaxSteps != 5 || j.Metadata["team"] != "web" {
		t.Errorf("optional fields not kept: %+v", j)
	}
	if b.queue.notified != 4 {
		t.Errorf("queue notified %d times, want 4", b.queue.notified)
	}
}

func TestBadInputIsRejectedAndStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	huge := `{"task": "` + strings.Repeat("a", 1<<20) + `"}`
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code, msg                string
	}{
		{"malformed", "POST", "/schedule", `{"task": `, 400, "invalid", "truncated"},
		{"syntax", "POST", "/schedule", `{"task" "x"}`, 400, "invalid", "malformed JSON"},
		{"empty body", "POST", "/schedule", ``, 400, "invalid", "empty"},
		{"blank task", "POST", "/schedule", `{"task": "  \n\t "}`, 400, "invalid", "task is required"},
		{"no task", "POST", "/schedule", `{"model": "x"}`, 400, "invalid", "task is required"},
		{"unknown field", "POST", "/schedule", `{"task": "x", "taks": "y"}`, 400, "invalid", `taks`},
		{"wrong type", "POST", "/v1/jobs", `{"task": "x", "max_steps": "ten"}`, 400, "invalid", "max_steps"},
		{"not an object", "POST", "/v1/jobs", `["x"]`, 400, "invalid", "object"},
		{"two values", "POST", "/v1/jobs", `{"task": "x"} {"task": "y"}`, 400, "invalid", "single JSON object"},
		{"task and prompt differ", "POST", "/submit", `{"task": "x", "prompt": "y"}`, 400, "invalid", "prompt"},
		{"bad profile", "POST", "/v1/jobs", `{"task": "x", "profile": "gpu"}`, 400, "invalid", "profile"},
		{"bad timeout", "POST", "/v1/jobs", `{"task": "x", "timeout": "soon"}`, 400, "invalid", "duration"},
		{"negative steps", "POST", "/v1/jobs", `{"task": "x", "max_steps": -1}`, 400, "invalid", "max_steps"},
		{"tiny budget", "POST", "/v1/jobs", `{"task": "x", "context_budget": 100}`, 400, "invalid", "context_budget"},
		{"bad egress", "POST", "/v1/jobs", `{"task": "x", "egress": ["pypi.example.com:http"]}`, 400, "invalid", "pypi.example.com:http"},
		{"egress not a list", "POST", "/v1/jobs", `{"task": "x", "egress": "pypi.example.com"}`, 400, "invalid", "egress"},
		{"too big", "POST", "/schedule", huge, 413, "too_large", "larger than"},
		{"unknown job", "GET", "/status/0193b0c4-1111-7000-8000-000000000000", ``, 404, "not_found", "not found"},
		{"encoded dots in the path", "GET", "/v1/jobs/..%2f..%2fetc", ``, 400, "invalid", "'..' segments"},
		{"wrong method", "DELETE", "/schedule", ``, 405, "method_not_allowed", "allowed"},
		{"wrong method on job", "PUT", "/v1/jobs/abc", ``, 405, "method_not_allowed", "GET"},
		{"unknown route", "GET", "/v2/nothing", ``, 404, "not_found", "no such route"},
		{"bad status filter", "GET", "/v1/jobs?status=done", ``, 400, "invalid", "unknown status"},
		{"bad limit", "GET", "/v1/jobs?limit=0", ``, 400, "invalid", "limit"},
		{"bad cursor", "GET", "/v1/jobs?cursor=!!!", ``, 400, "invalid", ""},
		{"unknown query", "GET", "/v1/jobs?stat=running", ``, 400, "invalid", "stat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := b.do(t, tc.method, tc.path, "", tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, data)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if got := errorCode(t, data); got != tc.code {
				t.Errorf("code %q, want %q (%s)", got, tc.code, data)
			}
			if !strings.Contains(string(data), tc.msg) {
				t.Errorf("message %s does not mention %q", data, tc.msg)
			}
		})
	}
	jobs, _, err := b.store.ListJobs(t.Context(), drydock.JobFilter{})
	if err != nil || len(jobs) != 0 {
		t.Fatalf("bad requests stored %d jobs (%v)", len(jobs), err)
	}
}

func TestAuthIsolatesUsers(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	aj := b.schedule(t, b.alice, `{"task": "alice's"}`)
	bj := b.schedule(t, b.bob, `{"task": "bob's"}`)

	for _, tc := range []struct {
		name, token, header string
		status              int
	}{
		{"no token", "", "", 401},
		{"wrong token", "ddk_wrong", "", 401},
		{"not bearer", "", "Basic YTpi", 401},
	} {
		req, _ := http.NewRequest("GET", b.url+"/v1/jobs", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || errorCode(t, data) != "unauthorized" {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, data)
		}
	}
	// Every job route: another user's job is not found; the owner and the
	// admin see it.
	for _, route := range []struct{ method, path string }{
		{"GET", "/status/%s"}, {"GET", "/v1/jobs/%s"}, {"GET", "/v1/jobs/%s/events"},
		{"GET", "/v1/jobs/%s/artifact.zip"}, {"GET", "/v1/jobs/%s/artifact.tar.gz"}, {"POST", "/v1/jobs/%s/cancel"},
		{"GET", "/v1/jobs/%s/diff"},
	} {
		path := fmt.Sprintf(route.path, aj.ID)
		if resp, data := b.do(t, route.method, path, b.bob, ""); resp.StatusCode != 404 {
			t.Errorf("bob %s %s: %d %s", route.method, path, resp.StatusCode, data)
		}
		if resp, data := b.do(t, route.method, path, "", ""); resp.StatusCode != 401 {
			t.Errorf("anonymous %s %s: %d %s", route.method, path, resp.StatusCode, data)
		}
		if route.method == "GET" && !strings.Contains(path, "artifact") && !strings.HasSuffix(path, "/diff") {
			if resp, data := b.do(t, route.method, path, b.alice, ""); resp.StatusCode != 200 {
				t.Errorf("alice %s %s: %d %s", route.method, path, resp.StatusCode, data)
			}
			if resp, data := b.do(t, route.method, path, b.admin, ""); resp.StatusCode != 200 {
				t.Errorf("admin %s %s: %d %s", route.method, path, resp.StatusCode, data)
			}
		}
	}
	ids := func(token string) []string {
		_, data := b.do(t, "GET", "/v1/jobs", token, "")
		var p api.JobPage
		json.Unmarshal(data, &p)
		var out []string
		for _, j := range p.Jobs {
			out = append(out, j.ID)
		}
		return out
	}
	if got := ids(b.alice); !slices.Equal(got, []string{aj.ID}) {
		t.Errorf("alice lists %v", got)
	}
	if got := ids(b.admin); !slices.Equal(got, []string{bj.ID, aj.ID}) {
		t.Errorf("admin lists %v", got)
	}
}

func TestListPaginatesWithoutGapsOrDuplicates(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	var want []string
	for i := range 7 {
		want = append(want, b.schedule(t, "", fmt.Sprintf(`{"task": "job %d"}`, i)).ID)
	}
	slices.Reverse(want) // newest first
	b.do(t, "POST", "/v1/jobs/"+want[0]+"/cancel", "", "")

	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		_, data := b.do(t, "GET", "/v1/jobs?limit=3&cursor="+cursor, "", "")
		var p api.JobPage
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		for _, j := range p.Jobs {
			got = append(got, j.ID)
		}
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	_, data := b.do(t, "GET", "/v1/jobs?status=cancelled", "", "")
	var p api.JobPage
	json.Unmarshal(data, &p)
	if len(p.Jobs) != 1 || p.Jobs[0].ID != want[0] {
		t.Errorf("status filter: %s", data)
	}
	_, data = b.do(t, "GET", "/v1/jobs?status=pending,running&status=complete", "", "")
	json.Unmarshal(data, &p)
	if len(p.Jobs) != 6 {
		t.Errorf("multi-status filter returned %d jobs", len(p.Jobs))
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	pending := b.schedule(t, "", `{"task": "x"}`)
	resp, data := b.do(t, "POST", "/v1/jobs/"+pending.ID+"/cancel", "", "")
	var j drydock.Job
	json.Unmarshal(data, &j)
	if resp.StatusCode != 202 || j.Status != drydock.StatusCancelled || j.FinishedAt == nil {
		t.Fatalf("cancel pending: %d %s", resp.StatusCode, data)
	}
	running := b.schedule(t, "", `{"task": "y"}`)
	claimed, err := b.store.ClaimJob(t.Context(), "w1", time.Minute)
	if err != nil || claimed == nil || claimed.ID != running.ID {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	resp, data = b.do(t, "POST", "/v1/jobs/"+running.ID+"/cancel", "", "")
	json.Unmarshal(data, &j)
	if resp.StatusCode != 202 || j.Status != drydock.StatusRunning {
		t.Fatalf("cancel running: %d %s", resp.StatusCode, data)
	}
	if !slices.Contains(b.queue.cancelled, running.ID) {
		t.Errorf("runner not told to cancel %s", running.ID)
	}
	got, _ := b.store.GetJob(t.Context(), running.ID)
	if !got.CancelRequested {
		t.Error("cancel request not stored")
	}
}

func TestEventsPageAndResumableStream(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	job := b.schedule(t, "", `{"task": "x"}`)
	if _, err := b.store.ClaimJob(t.Context(), "w1", time.Minute); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := b.store.AppendEvent(t.Context(), drydock.NewEvent(job.ID, drydock.EventLog, map[string]any{"message": fmt.Sprint("m", i)})); err != nil {
			t.Fatal(err)
		}
	}
	_, data := b.do(t, "GET", "/v1/jobs/"+job.ID+"/events?after=1&limit=2", "", "")
	var page api.EventPage
	json.Unmarshal(data, &page)
	if len(page.Events) != 2 || page.Events[0].Seq != 2 || page.NextAfter != 3 || page.Done {
		t.Fatalf("page: %s", data)
	}

	// Resume after seq 2: the stream sends 3, 4, then follows live events
	// and ends once the job is finished.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", b.url+"/v1/jobs/"+job.ID+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		b.store.AppendEvent(t.Context(), drydock.NewEvent(job.ID, drydock.EventLog, map[string]any{"message": "live"}))
		b.store.FinishJob(t.Context(), job.ID, "w1", drydock.JobResult{Status: drydock.StatusComplete})
	}()
	var ids []string
	var types []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, v)
		}
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			types = append(types, v)
		}
	}
	if diff := cmp.Diff([]string{"3", "4", "5", "6"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"log", "log", "log", "status", "end"}, types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	// A stream that ended leaves no waiter behind.
	resp.Body.Close()
	for deadline := time.Now().Add(2 * time.Second); b.store.Watched() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still watched after the stream ended", b.store.Watched())
		}
	}
}

func TestArtifactDownloads(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	job := b.schedule(t, "", `{"task": "x"}`)
	if resp, data := b.do(t, "GET", "/v1/jobs/"+job.ID+"/artifact.zip", "", ""); resp.StatusCode != 409 {
		t.Fatalf("before archive: %d %s", resp.StatusCode, data)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	files := map[string]string{"README.md": "hello\n", "src/app.js": "console.log(1)\n"}
	tw.WriteHeader(&tar.Header{Name: "src/", Typeflag: tar.TypeDir, Mode: 0o755})
	for _, name := range []string{"README.md", "src/app.js"} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg})
		tw.Write([]byte(files[name]))
	}
	tw.Close()
	zw.Close()
	key := job.ID + ".tar.gz"
	n, err := b.artifacts.Put(t.Context(), key, bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.store.SetArtifact(t.Context(), job.ID, key, n); err != nil {
		t.Fatal(err)
	}
	_, data := b.do(t, "GET", "/status/"+job.ID, "", "")
	var j drydock.Job
	json.Unmarshal(data, &j)
	// download_url is the zip the original designs promise, result its
	// alias; the tar.gz keeps its own field.
	if !strings.HasSuffix(j.DownloadURL, "/v1/jobs/"+job.ID+"/artifact.zip") || j.Result != j.DownloadURL {
		t.Errorf("download_url = %q, result = %q", j.DownloadURL, j.Result)
	}
	if !strings.HasSuffix(j.DownloadURLTar, "/v1/jobs/"+job.ID+"/artifact.tar.gz") {
		t.Errorf("download_url_tar = %q", j.DownloadURLTar)
	}
	if !strings.HasSuffix(j.DiffURL, "/v1/jobs/"+job.ID+"/diff") {
		t.Errorf("diff_url = %q", j.DiffURL)
	}
	resp, data := b.do(t, "GET", "/v1/jobs/"+job.ID+"/artifact.tar.gz", "", "")
	if resp.StatusCode != 200 || !bytes.Equal(data, buf.Bytes()) {
		t.Fatalf("tar.gz: %d, %d bytes", resp.StatusCode, len(data))
	}
	resp, data = b.do(t, "GET", "/v1/jobs/"+job.ID+"/artifact.zip", "", "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/zip" {
		t.Fatalf("zip: %d", resp.StatusCode)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		rc, _ := f.Open()
		c, _ := io.ReadAll(rc)
		rc.Close()
		got[f.Name] = string(c)
	}
	if diff := cmp.Diff(files, got); diff != "" {
		t.Errorf("zip content (-want +got):\n%s", diff)
	}
}

func TestOperationsEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.json"} {
		if resp, data := b.do(t, "GET", path, "", ""); resp.StatusCode != 200 {
			t.Errorf("%s without token: %d %s", path, resp.StatusCode, data)
		}
	}
	b.do(t, "GET", "/v1/jobs", b.alice, "")
	_, data := b.do(t, "GET", "/metrics", "", "")
	if !strings.Contains(string(data), `drydock_http_requests_total{code="200",route="GET /v1/jobs"} 1`) {
		t.Errorf("metrics lack the request counter:\n%s", data)
	}
}

// TestOpenAPICoversRoutes keeps openapi.json accurate: every served route is
// documented with its method, and nothing undocumented or stale remains.
func TestOpenAPICoversRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	_, data := b.do(t, "GET", "/openapi.json", "", "")
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var documented, served []string
	for p, ops := range doc.Paths {
		for m := range ops {
			documented = append(documented, strings.ToUpper(m)+" "+p)
		}
	}
	for _, r := range b.srv.Routes() {
		served = append(served, r[0]+" "+r[1])
	}
	slices.Sort(documented)
	slices.Sort(served)
	if diff := cmp.Diff(served, documented); diff != "" {
		t.Errorf("routes (-served +documented):\n%s", diff)
	}
}

func TestTrajectoryExport(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	job := b.schedule(t, "", `{"task": "x"}`)
	for i := range 1500 {
		if err := b.store.AppendEvent(t.Context(), drydock.NewEvent(job.ID, drydock.EventLog, map[string]any{"n": i})); err != nil {
			t.Fatal(err)
		}
	}
	resp, data := b.do(t, "GET", "/v1/jobs/"+job.ID+"/trajectory", "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	var tr drydock.Trajectory
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Format != drydock.TrajectoryFormat || tr.Job.ID != job.ID || len(tr.Events) != 1501 {
		t.Fatalf("format %q job %s, %d events", tr.Format, tr.Job.ID, len(tr.Events))
	}
	for i, e := range tr.Events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

func TestCreateKeepsBudgetAndEgress(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	j := b.schedule(t, "", `{"task": "x", "context_budget": 16000, "egress": [" pypi.example.com:443 ", "*.npm.example.com"]}`)
	_, data := b.do(t, "GET", "/v1/jobs/"+j.ID, "", "")
	var got drydock.Job
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.ContextBudget != 16000 || strings.Join(got.Egress, ",") != "pypi.example.com:443,*.npm.example.com" {
		t.Fatalf("stored budget %d, egress %q; want 16000 and the trimmed list", got.ContextBudget, got.Egress)
	}
}

// Development mode lasts exactly while no token exists: the first token
// created on a running server closes anonymous access at once, and revoking
// the last one reopens it, without a restart.
func TestDevelopmentModeIsDecidedPerRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	if resp, data := b.do(t, "GET", "/v1/jobs", "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("anonymous list with no tokens: %d %s", resp.StatusCode, data)
	}
	secret, hash := drydock.NewTokenSecret()
	if err := b.store.CreateToken(t.Context(), &drydock.Token{ID: "tok_first", Name: "first", Admin: true, CreatedAt: time.Now(), Hash: hash}); err != nil {
		t.Fatal(err)
	}
	resp, data := b.do(t, "GET", "/v1/jobs", "", "")
	if resp.StatusCode != http.StatusUnauthorized || errorCode(t, data) != "unauthorized" {
		t.Fatalf("anonymous list after the first token: %d %s; want 401", resp.StatusCode, data)
	}
	if resp, data := b.do(t, "GET", "/jobs/x/desktop", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous live view after the first token: %d %s; want 401", resp.StatusCode, data)
	}
	if resp, data := b.do(t, "GET", "/v1/jobs", secret, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("list with the token: %d %s", resp.StatusCode, data)
	}
	if err := b.store.RevokeToken(t.Context(), "tok_first"); err != nil {
		t.Fatal(err)
	}
	if resp, data := b.do(t, "GET", "/v1/jobs", "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("anonymous list after the last token was revoked: %d %s", resp.StatusCode, data)
	}
}

// A server that may not run in development mode (not on loopback) never
// lets an anonymous request in, even when every token has been revoked.
func TestNoDevelopmentModeOffLoopback(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	for _, id := range []string{"tok_alice", "tok_bob", "tok_admin"} {
		if err := b.store.RevokeToken(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	if resp, data := b.do(t, "GET", "/v1/jobs", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous list with every token revoked: %d %s; want 401", resp.StatusCode, data)
	}
}
