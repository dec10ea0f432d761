package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlite"
)

// A job's life in the store: created, claimed by a worker, finished.
func Example() {
	dir, err := os.MkdirTemp("", "drydock-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "drydock.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	job := &drydock.Job{
		ID:      "0190b6d4-1c2a-7d3e-8f40-1a2b3c4d5e6f", // a UUIDv7 in practice
		OwnerID: "tok-1",
		JobSpec: drydock.JobSpec{Task: "Write hello.txt"},
	}
	if err := store.CreateJob(ctx, job); err != nil {
		log.Fatal(err)
	}
	claimed, err := store.ClaimJob(ctx, "worker-1", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(claimed.Status, claimed.LeaseOwner, claimed.Attempts)

	err = store.FinishJob(ctx, claimed.ID, "worker-1", drydock.JobResult{Status: drydock.StatusComplete, Summary: "wrote hello.txt"})
	if err != nil {
		log.Fatal(err)
	}
	events, err := store.ListEvents(ctx, job.ID, 0, 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range events {
		fmt.Println(e.Seq, e.Type, string(e.Data))
	}
	// Output:
	// running worker-1 1
	// 1 status {"status":"pending"}
	// 2 status {"status":"complete"}
}
