package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/store/sqlite"
)

// post sends a job creation with an Idempotency-Key header (none when key
// is nil) and returns the status, the job's id (if any), whether the answer
// is marked as replayed, and the body.
func post(t *testing.T, url, path, token string, key []string, body string) (int, string, bool, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, k := range key {
		req.Header.Add("Idempotency-Key", k)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var j struct {
		JobID string `json:"job_id"`
	}
	json.Unmarshal(data, &j)
	return resp.StatusCode, j.JobID, resp.Header.Get("Idempotent-Replayed") == "true", data
}

func countJobs(t *testing.T, b *bundle, owner string) int {
	t.Helper()
	js, _, err := b.store.ListJobs(t.Context(), drydock.JobFilter{OwnerID: owner, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return len(js)
}

func TestIdempotencyKeyReplaysTheFirstJob(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	body := `{"task": "Build me a todo app", "max_steps": 5, "metadata": {"a": "1", "b": "2"}}`
	code, first, replayed, data := post(t, b.url, "/v1/jobs", b.alice, []string{"order-42"}, body)
	if code != http.StatusCreated || first == "" || replayed {
		t.Fatalf("first request: %d replayed=%v %s", code, replayed, data)
	}
	// The same job asked for again, in other words: other route, other
	// field order, synonym, explicit default profile, surrounding blanks.
	for _, tc := range []struct{ path, body string }{
		{"/v1/jobs", body},
		{"/schedule", `{"metadata": {"b": "2", "a": "1"}, "max_steps": 5, "prompt": "  Build me a todo app\n"}`},
		{"/submit", `{"task": "Build me a todo app", "max_steps": 5, "metadata": {"a": "1", "b": "2"}, "profile": "headless"}`},
	} {
		code, id, replayed, data := post(t, b.url, tc.path, b.alice, []string{"order-42"}, tc.body)
		if code != http.StatusCreated || id != first || !replayed {
			t.Errorf("retry %s %s: %d job %s replayed=%v; want 201 with job %s, replayed\n%s", tc.path, tc.body, code, id, replayed, first, data)
		}
	}
	if n := countJobs(t, b, "tok_alice"); n != 1 {
		t.Errorf("%d jobs after retries; want 1", n)
	}
	b.queue.mu.Lock()
	notified := b.queue.notified
	b.queue.mu.Unlock()
	if notified != 1 {
		t.Errorf("the runner was notified %d times; want once, for the one new job", notified)
	}
	// The replay answers like a first answer: the job and its Location.
	resp, data := b.do(t, "GET", "/v1/jobs/"+first, b.alice, "")
	if resp.StatusCode != 200 || !bytes.Contains(data, []byte(first)) {
		t.Fatalf("get the job: %d %s", resp.StatusCode, data)
	}
}

func TestIdempotencyKeyWithAnotherBodyIs422(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	if code, _, _, data := post(t, b.url, "/v1/jobs", b.alice, []string{"k"}, `{"task": "one"}`); code != 201 {
		t.Fatalf("first: %d %s", code, data)
	}
	for _, body := range []string{`{"task": "two"}`, `{"task": "one", "profile": "desktop"}`, `{"task": "one", "egress": ["pypi.example.com:443"]}`} {
		code, _, _, data := post(t, b.url, "/v1/jobs", b.alice, []string{"k"}, body)
		if code != http.StatusUnprocessableEntity || errorCode(t, data) != drydock.EKEYREUSED ||
			!strings.Contains(string(data), "already used for another request") {
			t.Errorf("same key, body %s: %d %s; want 422 idempotency_key_reused", body, code, data)
		}
	}
	if n := countJobs(t, b, "tok_alice"); n != 1 {
		t.Errorf("%d jobs; want 1", n)
	}
}

func TestIdempotencyKeysBelongToTheirToken(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	_, a, _, _ := post(t, b.url, "/v1/jobs", b.alice, []string{"same-key"}, `{"task": "x"}`)
	code, other, replayed, data := post(t, b.url, "/v1/jobs", b.bob, []string{"same-key"}, `{"task": "x"}`)
	if code != 201 || other == "" || other == a || replayed {
		t.Fatalf("bob with alice's key: %d job %s replayed=%v (alice's is %s)\n%s", code, other, replayed, a, data)
	}
	// Bob's replay is bob's job, and alice's job stays hidden from him.
	if _, again, _, _ := post(t, b.url, "/v1/jobs", b.bob, []string{"same-key"}, `{"task": "x"}`); again != other {
		t.Errorf("bob's retry got %s; want %s", again, other)
	}
	if resp, _ := b.do(t, "GET", "/v1/jobs/"+a, b.bob, ""); resp.StatusCode != 404 {
		t.Errorf("bob sees alice's job: %d", resp.StatusCode)
	}
}

func TestIdempotencyKeyHeaderIsChecked(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	for _, tc := range []struct {
		name string
		key  []string
	}{
		{"empty", []string{""}},
		{"too long", []string{strings.Repeat("k", 256)}},
		{"not ASCII", []string{"clé"}},
		{"two headers", []string{"a", "b"}},
		{"empty string item", []string{`""`}},
		{"unterminated string", []string{`"abc`}},
		{"after the string", []string{`"abc";x=1`}},
		{"bad escape", []string{`"a\b"`}},
	} {
		code, _, _, data := post(t, b.url, "/v1/jobs", b.alice, tc.key, `{"task": "x"}`)
		if code != http.StatusBadRequest || !strings.Contains(string(data), "Idempotency-Key") {
			t.Errorf("%s %q: %d %s; want 400 naming the header", tc.name, tc.key, code, data)
		}
	}
	// Go's client refuses to send a control byte; a raw request does, and
	// net/http refuses it before the handler (so its 400 is plain text).
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nIdempotency-Key: a\x01b\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{\"task\": \"x\"}", b.alice)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a control byte in the key: %d %s; want 400", resp.StatusCode, raw)
	}
	if n := countJobs(t, b, "tok_alice"); n != 0 {
		t.Errorf("%d jobs created by refused requests", n)
	}
	// The longest key, and the draft's quoted form, which names the same
	// key as the bare form.
	longest := strings.Repeat("~", 255)
	if code, _, _, data := post(t, b.url, "/v1/jobs", b.alice, []string{longest}, `{"task": "x"}`); code != 201 {
		t.Errorf("a 255-character key: %d %s", code, data)
	}
	_, bare, _, _ := post(t, b.url, "/v1/jobs", b.alice, []string{`a "quoted" \ key`}, `{"task": "y"}`)
	code, quoted, replayed, data := post(t, b.url, "/v1/jobs", b.alice, []string{`"a \"quoted\" \\ key"`}, `{"task": "y"}`)
	if code != 201 || quoted != bare || !replayed {
		t.Errorf("the quoted form of a key: %d job %s replayed=%v; want the bare form's %s\n%s", code, quoted, replayed, bare, data)
	}
}

// Concurrent identical requests: exactly one job, and every request gets it.
func TestIdempotencyKeyConcurrentRequestsMakeOneJob(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	const n = 32
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ids      = map[string]int{}
		replayed int
		codes    = map[int]int{}
	)
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, id, r, _ := post(t, b.url, "/schedule", b.alice, []string{"burst"}, `{"task": "only once"}`)
			mu.Lock()
			defer mu.Unlock()
			codes[code]++
			ids[id]++
			if r {
				replayed++
			}
		}()
	}
	close(start)
	wg.Wait()
	if codes[201] != n || len(ids) != 1 || replayed != n-1 {
		t.Fatalf("%d concurrent identical requests: codes %v, job ids %v, %d replayed; want all 201, one job, %d replayed", n, codes, ids, replayed, n-1)
	}
	if c := countJobs(t, b, "tok_alice"); c != 1 {
		t.Errorf("%d jobs stored; want 1", c)
	}
}

// The fingerprint of a request with secrets is keyed with the server's
// secrets key: the database holds no value in clear nor a hash that could
// be checked without that key; a server with another key does not
// recognise the request.
func TestIdempotencyFingerprintOfSecretsIsKeyed(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, withSecrets(newBox(t)))
	const canary = "idem-canary-4c1e7a0b93"
	body := `{"task": "use it", "secrets": {"API_TOKEN": "` + canary + `"}}`
	_, first, _, data := post(t, b.url, "/v1/jobs", b.alice, []string{"with-secret"}, body)
	if first == "" {
		t.Fatalf("create: %s", data)
	}
	if code, id, replayed, _ := post(t, b.url, "/v1/jobs", b.alice, []string{"with-secret"}, body); code != 201 || id != first || !replayed {
		t.Errorf("retry with the same secret: %d %s replayed=%v", code, id, replayed)
	}
	other := strings.Replace(body, canary, canary+"x", 1)
	if code, _, _, data := post(t, b.url, "/v1/jobs", b.alice, []string{"with-secret"}, other); code != 422 || bytes.Contains(data, []byte(canary)) {
		t.Errorf("same key, another secret value: %d %s; want 422 without the value", code, data)
	}

	// Another server on the same database with another secrets key.
	foreign := api.New(api.Config{Secrets: newBox(t)}, b.store, b.queue, b.artifacts, prometheus.NewRegistry(), nil)
	hs := httptest.NewServer(foreign)
	defer hs.Close()
	if code, _, _, data := post(t, hs.URL, "/v1/jobs", b.alice, []string{"with-secret"}, body); code != 422 {
		t.Errorf("the retry on a server with another key: %d %s; want 422 (its fingerprint differs: the hash is keyed)", code, data)
	}

	path := b.store.Store.(*sqlite.Store).Path()
	for _, f := range []string{path, path + "-wal"} {
		raw, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(canary)) {
			t.Errorf("%s holds the secret value in clear", filepath.Base(f))
		}
	}
}

func TestIdempotencyKeyExpires(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, func(c *api.Config) { c.IdempotencyTTL = 100 * time.Millisecond })
	_, first, _, _ := post(t, b.url, "/v1/jobs", b.alice, []string{"short"}, `{"task": "a"}`)
	time.Sleep(200 * time.Millisecond)
	code, second, replayed, data := post(t, b.url, "/v1/jobs", b.alice, []string{"short"}, `{"task": "b"}`)
	if code != 201 || second == first || replayed {
		t.Errorf("an expired key with another body: %d job %s replayed=%v; want a new job\n%s", code, second, replayed, data)
	}
	if n, err := b.store.PurgeIdempotencyKeys(t.Context()); err != nil || n != 0 {
		t.Errorf("purge = %d, %v; want 0 (the expired record was replaced)", n, err)
	}
}
