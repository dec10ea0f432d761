package e2e_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

func tarGzNames(t *testing.T, data []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			names = append(names, strings.TrimPrefix(h.Name, "./"))
		}
	}
	slices.Sort(names)
	return names
}

// The done-criterion of the orchestrator core: a job scheduled with the seed
// route walks pending → running → complete and its download_url works.
func TestLifecycleCompleteWithDownload(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.start()
	id := s.schedule(`{"task": "Build me a todo app [fake:steps=3] [fake:delay=200ms]"}`)
	if j := s.status(id); j.Status != drydock.StatusPending && j.Status != drydock.StatusRunning {
		t.Fatalf("fresh job is %s", j.Status)
	}
	j, seen := s.waitTerminal(id, 30*time.Second)
	if j.Status != drydock.StatusComplete {
		t.Fatalf("job ended %s: %s\n%s", j.Status, j.Error, s.logs)
	}
	if !slices.Contains(seen, drydock.StatusRunning) {
		t.Errorf("never saw running: %v", seen)
	}
	if j.Steps != 3 || j.StartedAt == nil || j.FinishedAt == nil || j.Usage.InputTokens == 0 || j.Summary == "" {
		t.Errorf("final status incomplete: %+v", j)
	}
	// download_url is the zip (checked below), download_url_tar the tar.gz.
	if !strings.HasPrefix(j.DownloadURL, s.url()+"/") || !strings.HasSuffix(j.DownloadURL, "/artifact.zip") || !strings.HasPrefix(j.DownloadURLTar, s.url()+"/") {
		t.Fatalf("download_url = %q, download_url_tar = %q", j.DownloadURL, j.DownloadURLTar)
	}
	code, data := s.do("GET", strings.TrimPrefix(j.DownloadURLTar, s.url()), "", "")
	if code != 200 {
		t.Fatalf("download: %d", code)
	}
	want := []string{"SUMMARY.md", "notes/step-001.md", "notes/step-002.md", "notes/step-003.md"}
	if got := tarGzNames(t, data); !slices.Equal(got, want) {
		t.Errorf("archive holds %v, want %v", got, want)
	}
	code, data = s.do("GET", "/v1/jobs/"+id+"/artifact.zip", "", "")
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if code != 200 || err != nil {
		t.Fatalf("zip: %d %v", code, err)
	}
	var names []string
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, "/") {
			names = append(names, f.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("zip holds %v", names)
	}
	var types []drydock.EventType
	for _, e := range s.events(id) {
		types = append(types, e.Type)
		// What the API serves is each kind's payload type exactly.
		if err := drydock.CheckEventData(e.Type, e.Data); err != nil {
			t.Errorf("event %d: %v", e.Seq, err)
		}
	}
	for _, want := range []drydock.EventType{drydock.EventStatus, drydock.EventModel, drydock.EventToolCall, drydock.EventObservation, drydock.EventUsage, drydock.EventArtifact, drydock.EventSummary} {
		if !slices.Contains(types, want) {
			t.Errorf("no %s event in %v", want, types)
		}
	}
	if types[0] != drydock.EventStatus || types[len(types)-1] != drydock.EventStatus {
		t.Errorf("log should start and end with status events: %v", types)
	}
}

func TestFailureCancelAndTimeout(t *testing.T) {
	t.Parallel()
	s := newServer(t, "--max-concurrent", "4")
	s.start()
	failing := s.schedule(`{"task": "x [fake:steps=1] [fake:delay=0s] [fake:fail=compiler exploded]"}`)
	hanging := s.schedule(`{"task": "x [fake:steps=1] [fake:delay=0s] [fake:hang]"}`)
	slow := s.schedule(`{"task": "x [fake:steps=1] [fake:delay=0s] [fake:hang]", "timeout": "2s"}`)

	j, _ := s.waitTerminal(failing, 30*time.Second)
	if j.Status != drydock.StatusError || j.Error != "compiler exploded" || j.DownloadURL == "" {
		t.Errorf("failing job: %s %q download=%q", j.Status, j.Error, j.DownloadURL)
	}
	// Wait until the hanging job is running, then cancel it.
	deadline := time.Now().Add(20 * time.Second)
	for s.status(hanging).Steps < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if code, b := s.do("POST", "/v1/jobs/"+hanging+"/cancel", "", ""); code != 202 {
		t.Fatalf("cancel: %d %s", code, b)
	}
	j, _ = s.waitTerminal(hanging, 10*time.Second)
	if j.Status != drydock.StatusCancelled || j.DownloadURL == "" {
		t.Errorf("cancelled job: %s %q download=%q", j.Status, j.Error, j.DownloadURL)
	}
	j, _ = s.waitTerminal(slow, 20*time.Second)
	if j.Status != drydock.StatusError || !strings.Contains(j.Error, "timed out after 2s") {
		t.Errorf("timed-out job: %s %q", j.Status, j.Error)
	}
	// A cancel of a finished job changes nothing.
	if code, b := s.do("POST", "/v1/jobs/"+failing+"/cancel", "", ""); code != 202 || !strings.Contains(string(b), `"status":"error"`) {
		t.Errorf("cancel of finished job: %d %s", code, b)
	}
}

func TestCancelPendingJobNeverRuns(t *testing.T) {
	t.Parallel()
	s := newServer(t, "--max-concurrent", "1")
	s.start()
	blocker := s.schedule(`{"task": "x [fake:hang]"}`)
	queued := s.schedule(`{"task": "x [fake:steps=1]"}`)
	code, b := s.do("POST", "/v1/jobs/"+queued+"/cancel", "", "")
	if code != 202 || !strings.Contains(string(b), `"status":"cancelled"`) {
		t.Fatalf("cancel pending: %d %s", code, b)
	}
	s.do("POST", "/v1/jobs/"+blocker+"/cancel", "", "")
	s.waitTerminal(blocker, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	if j := s.status(queued); j.Status != drydock.StatusCancelled || j.StartedAt != nil {
		t.Errorf("cancelled pending job ran: %+v", j)
	}
}
