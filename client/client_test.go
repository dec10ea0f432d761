package client_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
	"github.com/google/go-cmp/cmp"
)

// apiJSON is a job as the API shows it, without the links, which each
// test checks itself: what a client reads must be what the server holds.
func apiJSON(t *testing.T, j *drydock.Job) string {
	t.Helper()
	v := *j
	v.StatusURL, v.EventsURL, v.VNCURL, v.DownloadURL, v.DownloadURLTar, v.Result, v.DiffURL = "", "", "", "", "", "", ""
	v.Secrets = nil // answers name them only
	b, err := json.MarshalIndent(&v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestScheduleAndJob(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		spec := drydock.JobSpec{
			Task:     "write a haiku to poem.txt",
			Model:    "claude-x",
			MaxSteps: 20,
			Timeout:  drydock.Duration(15 * time.Minute),
			Profile:  drydock.ProfileDesktop,
			Metadata: map[string]string{"team": "docs"},

			ContextBudget: 32000,
		}
		j, err := c.Schedule(t.Context(), spec)
		if err != nil {
			t.Fatalf("Schedule: %v", err)
		}
		if j.ID == "" || j.Status != drydock.StatusPending {
			t.Fatalf("scheduled job = %+v, want an id and pending", j)
		}
		if diff := cmp.Diff(spec, j.JobSpec); diff != "" {
			t.Errorf("spec round trip (-sent +got):\n%s", diff)
		}
		links := map[string][2]string{
			"status_url":   {j.StatusURL, srv.URL() + "/status/" + j.ID},
			"events_url":   {j.EventsURL, srv.URL() + "/v1/jobs/" + j.ID + "/events"},
			"vnc_url":      {j.VNCURL, srv.URL() + "/jobs/" + j.ID + "/desktop"},
			"diff_url":     {j.DiffURL, ""},
			"download_url": {j.DownloadURL, ""},
		}
		for name, l := range links {
			if l[0] != l[1] {
				t.Errorf("%s = %q, want %q", name, l[0], l[1])
			}
		}

		srv.SetStatus(t, j.ID, drydock.StatusRunning, "")
		srv.SetProgress(t, j.ID, 3, drydock.Usage{InputTokens: 100, OutputTokens: 20, CostUSD: 0.5})
		got, err := c.Job(t.Context(), j.ID)
		if err != nil {
			t.Fatalf("Job: %v", err)
		}
		if diff := cmp.Diff(apiJSON(t, srv.Job(t, j.ID)), apiJSON(t, got)); diff != "" {
			t.Errorf("Job (-server +client):\n%s", diff)
		}
		if got.StartedAt == nil || got.Steps != 3 || got.Usage.CostUSD != 0.5 || got.StatusURL != j.StatusURL {
			t.Errorf("Job = %+v, want started, 3 steps, $0.5 and its links", got)
		}
	})
}

func TestErrorsKeepServerCodeAndMessage(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		_, err := c.Job(t.Context(), "nope")
		var de *drydock.Error
		if !errors.As(err, &de) || de.Code != drydock.ENOTFOUND || de.Message != `job "nope" not found` {
			t.Errorf("Job(nope) error = %#v, want not_found with the server's message", err)
		}

		_, err = c.Schedule(t.Context(), drydock.JobSpec{Task: "  "})
		if got := drydock.ErrorCode(err); got != drydock.EINVALID {
			t.Errorf("blank task: code %q (%v), want invalid", got, err)
		}

		bad := client.New(srv.URL(), "ddk_wrong")
		_, err = bad.Jobs(t.Context(), client.ListOptions{})
		if got := drydock.ErrorCode(err); got != drydock.EUNAUTHORIZED {
			t.Errorf("wrong token: code %q (%v), want unauthorized", got, err)
		}

		_, err = c.Job(t.Context(), "")
		if got := drydock.ErrorCode(err); got != drydock.EINVALID {
			t.Errorf("empty id: code %q, want invalid", got)
		}
	})
}

func TestConnectionFailureNamesTheURLAndTheFix(t *testing.T) {
	t.Parallel()
	// A port that was just free is refused, quickly and without leaving the
	// machine.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()

	_, err = client.New(url, "").Job(t.Context(), "j1")
	var ce *client.ConnError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *client.ConnError", err)
	}
	msg := err.Error()
	for _, want := range []string{"cannot reach the Drydock server at " + url, "`drydock server`", "DRYDOCK_URL", "refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message spans lines: %q", msg)
	}
	if !drydock.IsRetryable(err) || drydock.ErrorCode(err) != drydock.EUNAVAILABLE {
		t.Errorf("connection failure: code %q, retryable %v; want unavailable and retryable", drydock.ErrorCode(err), drydock.IsRetryable(err))
	}

	// A password in the URL stays out of the message.
	withPass := strings.Replace(url, "http://", "http://ops:hunter2@", 1)
	_, err = client.New(withPass, "").Job(t.Context(), "j1")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("message leaks the URL's password: %v", err)
	}
}

func TestBaseURLForms(t *testing.T) {
	t.Parallel()
	var gotPath, gotUA, gotAuth string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotUA, gotAuth = r.URL.EscapedPath(), r.UserAgent(), r.Header.Get("Authorization")
		fmt.Fprint(w, `{"job_id": "a/b", "status": "running"}`)
	}))
	t.Cleanup(hs.Close)
	host := strings.TrimPrefix(hs.URL, "http://")

	tests := []struct{ base, id, wantPath string }{
		{hs.URL, "j1", "/v1/jobs/j1"},
		{hs.URL + "/", "j1", "/v1/jobs/j1"},
		{hs.URL + "/drydock/", "j1", "/drydock/v1/jobs/j1"},
		{host, "j1", "/v1/jobs/j1"},
		{hs.URL, "a/b", "/v1/jobs/a%2Fb"},
	}
	for _, tt := range tests {
		c := client.New(tt.base, "ddk_x", client.WithUserAgent("drydock-test/1"))
		if _, err := c.Job(t.Context(), tt.id); err != nil {
			t.Errorf("New(%q).Job(%q): %v", tt.base, tt.id, err)
			continue
		}
		if gotPath != tt.wantPath || gotUA != "drydock-test/1" || gotAuth != "Bearer ddk_x" {
			t.Errorf("New(%q).Job(%q) sent path %q UA %q auth %q", tt.base, tt.id, gotPath, gotUA, gotAuth)
		}
	}

	for _, base := range []string{"", "ftp://host", "http://"} {
		_, err := client.New(base, "").Job(t.Context(), "j1")
		if drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("New(%q): error %v, want invalid", base, err)
		}
	}
}

func TestNoTokenSendsNoAuthorization(t *testing.T) {
	t.Parallel()
	var auth []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Values("Authorization")
		fmt.Fprint(w, `{"jobs": [], "next_cursor": ""}`)
	}))
	t.Cleanup(hs.Close)
	if _, err := client.New(hs.URL, "").Jobs(t.Context(), client.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(auth) != 0 {
		t.Errorf("Authorization sent without a token: %q", auth)
	}
}

func TestJobsPagingAndFilter(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		var ids []string
		for i := range 7 {
			j := srv.AddJob(t, drydock.JobSpec{Task: fmt.Sprint("task ", i)}, base.Add(time.Duration(i)*time.Minute))
			ids = append(ids, j.ID)
			if i%2 == 1 {
				srv.SetStatus(t, j.ID, drydock.StatusCancelled, "")
			}
		}

		p, err := c.Jobs(t.Context(), client.ListOptions{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if got := jobIDs(p.Jobs); !cmp.Equal(got, []string{ids[6], ids[5], ids[4]}) || p.NextCursor == "" {
			t.Errorf("first page = %v cursor %q, want the 3 newest and a cursor", got, p.NextCursor)
		}

		var all []string
		for j, err := range c.AllJobs(t.Context(), client.ListOptions{Limit: 3}) {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, j.ID)
		}
		want := []string{ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]}
		if diff := cmp.Diff(want, all); diff != "" {
			t.Errorf("AllJobs (-want +got):\n%s", diff)
		}

		p, err = c.Jobs(t.Context(), client.ListOptions{Status: []drydock.JobStatus{drydock.StatusCancelled}})
		if err != nil {
			t.Fatal(err)
		}
		if got := jobIDs(p.Jobs); !cmp.Equal(got, []string{ids[5], ids[3], ids[1]}) || p.NextCursor != "" {
			t.Errorf("cancelled jobs = %v cursor %q, want %v and no cursor", got, p.NextCursor, []string{ids[5], ids[3], ids[1]})
		}

		_, err = c.Jobs(t.Context(), client.ListOptions{Limit: 9999})
		if drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("limit 9999: %v, want invalid", err)
		}
	})
}

func TestAllJobsStopsOnErrorAndOnStuckCursor(t *testing.T) {
	t.Parallel()
	calls := 0
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		fmt.Fprint(w, `{"jobs": [{"job_id": "a", "status": "pending"}], "next_cursor": "same"}`)
	}))
	t.Cleanup(hs.Close)
	n := 0
	for _, err := range client.New(hs.URL, "").AllJobs(t.Context(), client.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 || calls != 2 {
		t.Errorf("a cursor that does not move: %d jobs in %d calls, want 2 in 2", n, calls)
	}

	forEachServer(t, func(t *testing.T, srv apiServer, _ *client.Client) {
		bad := client.New(srv.URL(), "ddk_wrong")
		var errs []error
		for j, err := range bad.AllJobs(t.Context(), client.ListOptions{}) {
			if j != nil {
				t.Errorf("got job %v with a bad token", j.ID)
			}
			errs = append(errs, err)
		}
		if len(errs) != 1 || drydock.ErrorCode(errs[0]) != drydock.EUNAUTHORIZED {
			t.Errorf("bad token: %v, want one unauthorized error", errs)
		}
	})
}

func TestCancel(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		// The runner starts the oldest pending job first.
		running := srv.AddJob(t, drydock.JobSpec{Task: "r"}, time.Now())
		srv.SetStatus(t, running.ID, drydock.StatusRunning, "")
		pending := srv.AddJob(t, drydock.JobSpec{Task: "p"}, time.Now())

		j, err := c.Cancel(t.Context(), pending.ID)
		if err != nil || j.Status != drydock.StatusCancelled || j.FinishedAt == nil {
			t.Errorf("Cancel(pending) = %v, %v; want cancelled, finished", j, err)
		}
		if p, err := c.Events(t.Context(), pending.ID, 0, 100); err != nil || len(p.Events) != 2 || !strings.Contains(string(p.Events[1].Data), `"cancelled"`) || !p.Done {
			t.Errorf("a cancelled job's events: %+v, %v; want its status event, and done", p, err)
		}
		j, err = c.Cancel(t.Context(), running.ID)
		if err != nil || j.Status != drydock.StatusRunning {
			t.Errorf("Cancel(running) = %v, %v; want running (stops shortly)", j, err)
		}
		if _, err := c.Cancel(t.Context(), "nope"); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("Cancel(nope) = %v, want not_found", err)
		}
	})
}

func TestEventsPages(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now()) // event 1: pending
		srv.SetStatus(t, j.ID, drydock.StatusRunning, "")          // 2
		for i := range 3 {
			srv.Emit(t, j.ID, drydock.EventLog, map[string]string{"message": fmt.Sprint("line ", i)}) // 3..5
		}

		p, err := c.Events(t.Context(), j.ID, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(p.Events); !cmp.Equal(got, []int64{1, 2}) || p.NextAfter != 2 || p.Done {
			t.Errorf("page 1 = %v next %d done %v", got, p.NextAfter, p.Done)
		}
		p, err = c.Events(t.Context(), j.ID, p.NextAfter, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(p.Events); !cmp.Equal(got, []int64{3, 4, 5}) || p.NextAfter != 5 || p.Done {
			t.Errorf("page 2 = %v next %d done %v; want 3..5, not done while running", got, p.NextAfter, p.Done)
		}
		if p.Events[0].Type != drydock.EventLog || string(p.Events[0].Data) != `{"message":"line 0"}` || p.Events[0].JobID != j.ID {
			t.Errorf("event 3 = %+v", p.Events[0])
		}

		srv.SetStatus(t, j.ID, drydock.StatusComplete, "") // 6
		p, err = c.Events(t.Context(), j.ID, 5, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(p.Events); !cmp.Equal(got, []int64{6}) || !p.Done {
			t.Errorf("last page = %v done %v; want [6] and done", got, p.Done)
		}
		p, err = c.Events(t.Context(), j.ID, 6, 100)
		if err != nil || len(p.Events) != 0 || p.NextAfter != 6 || !p.Done {
			t.Errorf("past the end = %+v, %v; want empty, next 6, done", p, err)
		}
	})
}

func TestDownload(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())

		var buf bytes.Buffer
		_, err := c.Download(t.Context(), j.ID, "tar.gz", &buf)
		if drydock.ErrorCode(err) != drydock.ECONFLICT {
			t.Errorf("before archiving: %v, want conflict", err)
		}

		files := map[string]string{
			"README.md": "# hi\n",
			"big.bin":   strings.Repeat("0123456789abcdef", 100_000), // 1.6 MB
		}
		srv.SetStatus(t, j.ID, drydock.StatusRunning, "")
		srv.SetArchive(t, j.ID, files)
		srv.SetStatus(t, j.ID, drydock.StatusComplete, "")
		archive := tarGz(t, files)
		n, err := c.Download(t.Context(), j.ID, "", &buf)
		if err != nil || n != int64(len(archive)) || !bytes.Equal(buf.Bytes(), archive) {
			t.Errorf("Download tar.gz = %d, %v; want %d identical bytes", n, err, len(archive))
		}
		buf.Reset()
		n, err = c.Download(t.Context(), j.ID, "zip", &buf)
		if err != nil || n != int64(buf.Len()) {
			t.Fatalf("Download zip = %d, %v", n, err)
		}
		if diff := cmp.Diff(files, unzip(t, buf.Bytes())); diff != "" {
			t.Errorf("zip's files (-want +got):\n%s", diff)
		}
		if _, err := c.Download(t.Context(), j.ID, "rar", &buf); drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("format rar: %v, want invalid", err)
		}
		lost := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())
		srv.SetStatus(t, lost.ID, drydock.StatusRunning, "")
		srv.SetStatus(t, lost.ID, drydock.StatusError, "sandbox lost")
		if _, err := c.Download(t.Context(), lost.ID, "zip", &buf); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("a job that ended without an archive: %v, want not_found", err)
		}
		if got, err := c.Job(t.Context(), j.ID); err != nil || got.DownloadURL != srv.URL()+"/v1/jobs/"+j.ID+"/artifact.zip" || got.DownloadURLTar != srv.URL()+"/v1/jobs/"+j.ID+"/artifact.tar.gz" {
			t.Errorf("archived job's links: %+v, %v", got, err)
		}
	})
}

func TestDownloadCutShortIsAnError(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write(make([]byte, 400))
		// Returning without the promised bytes makes net/http close the
		// connection mid-body.
	}))
	t.Cleanup(hs.Close)
	var buf bytes.Buffer
	n, err := client.New(hs.URL, "").Download(t.Context(), "j1", "zip", &buf)
	if err == nil {
		t.Fatalf("truncated download succeeded with %d bytes", n)
	}
	if !strings.Contains(err.Error(), "download j1") {
		t.Errorf("error %q does not name the job", err)
	}
}

func jobIDs(js []*drydock.Job) []string {
	var ids []string
	for _, j := range js {
		ids = append(ids, j.ID)
	}
	return ids
}

func seqs(es []*drydock.Event) []int64 {
	var s []int64
	for _, e := range es {
		s = append(s, e.Seq)
	}
	return s
}
