package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
	"github.com/drydockhq/drydock/client/clienttest"
)

func TestDiffReturnsThePatch(t *testing.T) {
	t.Parallel()
	srv := clienttest.NewServer()
	t.Cleanup(srv.Close)
	j := srv.AddJob(drydock.JobSpec{Task: "t"}, time.Now())
	c := client.New(srv.URL, "")
	if _, err := c.Diff(t.Context(), j.ID); drydock.ErrorCode(err) != drydock.ECONFLICT {
		t.Errorf("before a diff exists: %v", err)
	}
	patch := "diff --git a/x b/x\nnew file mode 100644\n"
	srv.SetDiff(j.ID, []byte(patch))
	d, err := c.Diff(t.Context(), j.ID)
	if err != nil || string(d.Patch) != patch || d.Truncated {
		t.Fatalf("diff: %+v %v", d, err)
	}
	if got, _ := c.Job(t.Context(), j.ID); got.DiffURL == "" {
		t.Errorf("the job names no diff_url")
	}
}

// A page that is not a diff (a proxy's, or the web UI's index) is never
// returned as the job's diff.
func TestDiffRefusesAnAnswerThatIsNotADiff(t *testing.T) {
	t.Parallel()
	url, _ := foreignServer(t, 200, "text/html", nginxPage)
	_, err := client.New(url, "").Diff(t.Context(), "0193aaaa-0000-7000-8000-000000000001")
	var fe *client.ForeignAnswerError
	if !errors.As(err, &fe) {
		t.Errorf("err = %v, want a ForeignAnswerError", err)
	}
}
