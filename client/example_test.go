package client_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
	"github.com/drydockhq/drydock/client/clienttest"
)

// Schedule a job, follow its events until it ends, read what it changed
// and download its workspace. The in-memory server stands in for `drydock server`; against a
// real one, use its URL and a token from `drydock token create`.
func Example() {
	srv := clienttest.NewServer()
	defer srv.Close()
	ctx := context.Background()

	c := client.New(srv.URL, os.Getenv("DRYDOCK_TOKEN"))
	job, err := c.Schedule(ctx, drydock.JobSpec{
		Task:    "Write a haiku about ships to poem.txt",
		Timeout: drydock.Duration(15 * time.Minute),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("scheduled:", job.Status)

	// What a worker would do on the server side.
	go func() {
		srv.SetStatus(job.ID, drydock.StatusRunning, "")
		srv.Emit(job.ID, drydock.EventToolCall, map[string]any{"name": "bash", "input": map[string]string{"command": "echo ... > poem.txt"}})
		srv.SetArtifact(job.ID, "tar.gz", []byte("an archive"))
		srv.SetDiff(job.ID, []byte("diff --git a/poem.txt b/poem.txt\nnew file mode 100644\n"))
		srv.SetStatus(job.ID, drydock.StatusComplete, "")
	}()

	err = c.StreamEvents(ctx, job.ID, 0, func(e *drydock.Event) error {
		fmt.Println("event:", e.Seq, e.Type)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	job, err = c.Job(ctx, job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("finished:", job.Status)

	d, err := c.Diff(ctx, job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("diff: %d bytes\n", len(d.Patch))

	n, err := c.Download(ctx, job.ID, "tar.gz", io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("downloaded bytes:", n)
	// Output:
	// scheduled: pending
	// event: 1 status
	// event: 2 status
	// event: 3 tool_call
	// event: 4 status
	// finished: complete
	// diff: 54 bytes
	// downloaded bytes: 10
}

// Start a job from a local project: the directory is packed to tar.gz as
// it is sent, without what its .gitignore files name and without .git.
// (client.WorkspaceFile sends a tar, tar.gz or zip file as it is.)
func ExampleWithWorkspace() {
	c := client.New("http://127.0.0.1:8080", os.Getenv("DRYDOCK_TOKEN"))
	job, err := c.Schedule(context.Background(), drydock.JobSpec{Task: "fix the failing test"},
		client.WithWorkspace(client.WorkspaceDir("./myproject", client.PackOptions{})))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.ID, job.InputSize)
}
