package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
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
