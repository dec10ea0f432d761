package e2e_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/secretbox"
	"github.com/jackc/pgx/v5"
)

// freshDatabase creates an empty database for one test on the test cluster
// and returns its URL.
func freshDatabase(t *testing.T) string {
	t.Helper()
	admin := os.Getenv("DRYDOCK_TEST_POSTGRES_DSN")
	if admin == "" {
		t.Skip("DRYDOCK_TEST_POSTGRES_DSN not set: no PostgreSQL (scripts/testenv/postgres-up.sh starts one; make test does)")
	}
	ctx := ctxT(t, 30*time.Second)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("e2e_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, admin); err == nil {
			c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	u, _ := url.Parse(admin)
	u.Path = "/" + name
	return u.String()
}

// Three replicas against one Postgres: every job runs exactly once, the work
// spreads over the replicas, events are served by any replica, and kill -9 of
// a replica with running jobs hands them to another within the lease TTL.
func TestThreeReplicasShareWorkAndFailOver(t *testing.T) {
	t.Parallel()
	dsn := freshDatabase(t)
	shared := t.TempDir() // artifacts and local sandboxes, as shared storage would be
	var replicas []*server
	for range 3 {
		s := newServer(t, "--store", dsn, "--max-concurrent", "3")
		s.dataDir = shared
		for i, a := range s.args {
			if a == "--data-dir" {
				s.args[i+1] = shared
			}
		}
		s.start()
		replicas = append(replicas, s)
	}

	// 30 short jobs scheduled round-robin through the three APIs.
	var ids []string
	for i := range 30 {
		ids = append(ids, replicas[i%3].schedule(`{"task": "x [fake:steps=2] [fake:delay=100ms]"}`))
	}
	ranOn := map[string]int{}
	for i, id := range ids {
		j, _ := replicas[(i+1)%3].waitTerminal(id, 90*time.Second)
		if j.Status != drydock.StatusComplete || j.Steps != 2 {
			t.Fatalf("job %s: %s steps=%d %q", id, j.Status, j.Steps, j.Error)
		}
		running := 0
		for _, e := range replicas[(i+2)%3].events(id) {
			var d struct{ Status, Node string }
			json.Unmarshal(e.Data, &d)
			if e.Type == drydock.EventStatus && d.Status == "running" {
				running++
				ranOn[d.Node]++
			}
		}
		if running != 1 {
			t.Errorf("job %s started %d times", id, running)
		}
	}
	t.Logf("jobs per replica: %v", ranOn)
	if len(ranOn) < 2 {
		t.Errorf("work did not spread: %v", ranOn)
	}

	// Failover: long jobs; kill -9 the replica running one of them.
	var long []string
	for range 3 {
		long = append(long, replicas[0].schedule(`{"task": "x [fake:steps=8] [fake:delay=500ms]"}`))
	}
	victim := -1
	var victimJob string
	deadline := time.Now().Add(30 * time.Second)
	for victim < 0 && time.Now().Before(deadline) {
		for _, id := range long {
			for _, e := range replicas[0].events(id) {
				var d struct{ Status, Node string }
				json.Unmarshal(e.Data, &d)
				if e.Type == drydock.EventStatus && d.Status == "running" {
					for i, s := range replicas {
						if d.Node == s.node {
							victim, victimJob = i, id
						}
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if victim < 0 {
		t.Fatal("no long job started")
	}
	killed := time.Now()
	replicas[victim].kill()
	other := replicas[(victim+1)%3]
	var resumedAfter time.Duration
	for time.Now().Before(killed.Add(60 * time.Second)) {
		for _, e := range other.events(victimJob) {
			if e.Type == drydock.EventLog && strings.Contains(string(e.Data), "resuming on") && resumedAfter == 0 {
				resumedAfter = e.Time.Sub(killed)
			}
		}
		if resumedAfter != 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resumedAfter == 0 {
		t.Fatalf("job %s was not resumed after its replica died", victimJob)
	}
	t.Logf("failover: job resumed on another replica %s after kill -9 (lease TTL 3s)", resumedAfter.Round(time.Millisecond))
	for _, id := range long {
		if j, _ := other.waitTerminal(id, 90*time.Second); j.Status != drydock.StatusComplete || j.Steps != 8 {
			t.Errorf("long job %s: %s steps=%d %q", id, j.Status, j.Steps, j.Error)
		}
	}
}

// One Idempotency-Key sent to three replicas at once, as a client retrying
// through a load balancer does: one job, every answer names it, and the
// same key with another request is refused on any replica. The replicas
// share the secrets key file the docs ask for, which the fingerprint of a
// request with secrets is made under.
func TestIdempotencyAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn := freshDatabase(t)
	keyFile := filepath.Join(t.TempDir(), "secrets.key")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(secretbox.GenerateKey())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var replicas []*server
	for range 3 {
		s := newServer(t, "--store", dsn, "--secrets-key-file", keyFile)
		s.start()
		replicas = append(replicas, s)
	}
	post := func(s *server, key, body string) (int, string, []byte) {
		req, _ := http.NewRequest("POST", s.url()+"/v1/jobs", strings.NewReader(body))
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("POST: %v", err)
			return 0, "", nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), b
	}

	const body = `{"task": "once [fake:steps=1]", "secrets": {"DEPLOY_TOKEN": "s3cr3t-value-for-replicas"}, "metadata": {"k": "v"}}`
	type answer struct {
		code     int
		replayed string
		id       string
	}
	answers := make([]answer, 24)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			code, replayed, b := post(replicas[i%3], "deploy-42", body)
			var j drydock.Job
			json.Unmarshal(b, &j)
			answers[i] = answer{code, replayed, j.ID}
		})
	}
	wg.Wait()
	ids := map[string]int{}
	fresh := 0
	for i, a := range answers {
		if a.code != 201 {
			t.Errorf("request %d (replica %d): %d", i, i%3, a.code)
		}
		ids[a.id]++
		if a.replayed != "true" {
			fresh++
		}
	}
	if len(ids) != 1 || fresh != 1 {
		t.Fatalf("24 requests with one key over 3 replicas: jobs %v, %d not replayed; want one job, one fresh answer", ids, fresh)
	}
	var id string
	for id = range ids {
	}
	code, b := replicas[1].do("GET", "/v1/jobs?limit=100", "", "")
	var list struct{ Jobs []drydock.Job }
	if json.Unmarshal(b, &list); code != 200 || len(list.Jobs) != 1 || list.Jobs[0].ID != id {
		t.Errorf("job list: %d %s", code, b)
	}
	// A retry with the fields in another order is the same request; another
	// task under the key is not, whichever replica gets it.
	for i, s := range replicas {
		if code, replayed, b := post(s, "deploy-42", `{"metadata": {"k": "v"}, "secrets": {"DEPLOY_TOKEN": "s3cr3t-value-for-replicas"}, "task": "once [fake:steps=1]"}`); code != 201 || replayed != "true" || !strings.Contains(string(b), id) {
			t.Errorf("replica %d, reordered retry: %d replayed=%q %s", i, code, replayed, b)
		}
		if code, _, b := post(s, "deploy-42", `{"task": "twice [fake:steps=1]"}`); code != 422 || !strings.Contains(string(b), `"`+drydock.EKEYREUSED+`"`) {
			t.Errorf("replica %d, key reused for another task: %d %s", i, code, b)
		}
	}
	if j, _ := replicas[2].waitTerminal(id, 90*time.Second); j.Status != drydock.StatusComplete {
		t.Errorf("job %s: %s %q", id, j.Status, j.Error)
	}

	// A replica given another key file would fail every job with secrets it
	// claims, and answer 422 to retries made through the others: it refuses
	// to start.
	wrong := filepath.Join(t.TempDir(), "wrong.key")
	if err := os.WriteFile(wrong, []byte(base64.StdEncoding.EncodeToString(secretbox.GenerateKey())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	odd := newServer(t, "--store", dsn, "--secrets-key-file", wrong)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, binary, odd.args...).CombinedOutput(); err == nil || !strings.Contains(string(out), "not the key the store's secrets are sealed with") {
		t.Errorf("a replica with another key: %v\n%s", err, out)
	}
}
