package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// Diff returns the stored diff of an archived job; before the job started
// it is a conflict, and an archived job without a diff (its starting point
// was not recorded) is not found, with its diff_url still named.
func TestDiffReturnsThePatch(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())
		if _, err := c.Diff(t.Context(), j.ID); drydock.ErrorCode(err) != drydock.ECONFLICT {
			t.Errorf("before the job started: %v, want conflict", err)
		}
		srv.SetStatus(t, j.ID, drydock.StatusRunning, "")
		srv.SetArchive(t, j.ID, map[string]string{"x": "x\n"})
		srv.SetStatus(t, j.ID, drydock.StatusComplete, "")
		if _, err := c.Diff(t.Context(), j.ID); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("archived without a diff: %v, want not_found", err)
		}
		if got, _ := c.Job(t.Context(), j.ID); got.DiffURL != srv.URL()+"/v1/jobs/"+j.ID+"/diff" {
			t.Errorf("an archived job's diff_url = %q", got.DiffURL)
		}
		patch := "diff --git a/x b/x\nnew file mode 100644\n"
		srv.SetDiff(t, j.ID, []byte(patch))
		d, err := c.Diff(t.Context(), j.ID)
		if err != nil || string(d.Patch) != patch || d.Truncated {
			t.Fatalf("diff: %+v %v", d, err)
		}
	})
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
