package client_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/fake"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/client"
	"github.com/drydockhq/drydock/runner"
	localrt "github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/watch"
)

// runningServer is the real server with its runner: the local runtime
// (toolboxd in process over a directory of the test's) and the fake agent,
// as `drydock server --runtime local --agent fake` composes them.
func runningServer(t *testing.T) *client.Client {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ws := watch.Wrap(st)
	rt, err := localrt.New(localrt.Options{Root: filepath.Join(dir, "sandboxes"), ServerID: "client-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	arts, err := local.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	dial := func(sb *drydock.Sandbox) *toolbox.Client { return toolbox.New(sb.Endpoint, sb.Token) }
	r := runner.New(runner.Config{NodeID: "client-test", PollInterval: 50 * time.Millisecond}, runner.Deps{
		Store: ws, Runtime: rt, Artifacts: arts,
		Agent:   &fake.Agent{Dial: func(sb *drydock.Sandbox) fake.Workspace { return dial(sb) }},
		Toolbox: func(sb *drydock.Sandbox) runner.Toolbox { return runnerToolbox{dial(sb)} },
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	srv := api.New(api.Config{DevMode: true, SSEPoll: 50 * time.Millisecond}, ws, r, arts, prometheus.NewRegistry(), nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return client.New(hs.URL, "")
}

// runnerToolbox is the toolbox client as the runner uses it: readiness of
// every component, the archive of the whole workspace.
type runnerToolbox struct{ *toolbox.Client }

func (c runnerToolbox) WaitReady(ctx context.Context) error { return c.Client.WaitReady(ctx) }

func (c runnerToolbox) DownloadTar(ctx context.Context, p string) (io.ReadCloser, error) {
	return c.Client.DownloadTar(ctx, p)
}

// A job runs for real, and the client reads all of it: the events as they
// are written, Wait's end, the archive in both formats, the diff and the
// summary.
// The behaviour tests set each state themselves; this one checks that the
// states a real run goes through read the same.
func TestAJobRunsOnTheRealServer(t *testing.T) {
	t.Parallel()
	c := runningServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	j, err := c.Schedule(ctx, drydock.JobSpec{Task: "write notes [fake:steps=2] [fake:delay=0s]"})
	if err != nil {
		t.Fatal(err)
	}
	fn, got := collect()
	if err := c.StreamEvents(ctx, j.ID, 0, fn); err != nil {
		t.Fatalf("StreamEvents: %v", err)
	}
	done, err := c.Wait(ctx, j.ID)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if done.Status != drydock.StatusComplete || done.Steps != 2 || !strings.Contains(done.Summary, "Completed 2 scripted steps") || done.DownloadURL == "" || done.FinishedAt == nil {
		t.Fatalf("finished job %+v; want complete after 2 steps, with its summary and archive", done)
	}
	var types []drydock.EventType
	for _, e := range got() {
		types = append(types, e.Type)
	}
	for _, want := range []drydock.EventType{drydock.EventStatus, drydock.EventToolCall, drydock.EventObservation, drydock.EventArtifact} {
		if !slices.Contains(types, want) {
			t.Errorf("streamed events %v lack %s", types, want)
		}
	}
	if last := got()[len(got())-1]; last.Type != drydock.EventStatus || !strings.Contains(string(last.Data), `"complete"`) {
		t.Errorf("last event %s %s; want the complete status", last.Type, last.Data)
	}

	var zip bytes.Buffer
	if _, err := c.Download(ctx, j.ID, "zip", &zip); err != nil {
		t.Fatalf("Download zip: %v", err)
	}
	files := unzip(t, zip.Bytes())
	if !strings.Contains(files["notes/step-002.md"], "# Step 2") || !strings.Contains(files["SUMMARY.md"], "Completed 2 scripted steps") {
		t.Errorf("archived files %v; want the two notes and the summary", sortedKeys(files))
	}
	d, err := c.Diff(ctx, j.ID)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	if !bytes.Contains(d.Patch, []byte("+++ b/notes/step-001.md")) || !bytes.Contains(d.Patch, []byte("+++ b/SUMMARY.md")) {
		t.Errorf("diff; want the notes and the summary as new files, got:\n%s", d.Patch)
	}
	var tgz bytes.Buffer
	if n, err := c.Download(ctx, j.ID, "tar.gz", &tgz); err != nil || n == 0 || !bytes.HasPrefix(tgz.Bytes(), []byte{0x1f, 0x8b}) {
		t.Errorf("Download tar.gz: %d bytes, %v; want a gzip stream", n, err)
	}
}
