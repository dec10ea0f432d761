package client_test

import (
	"slices"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

func TestSetEgress(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())
		got, err := c.SetEgress(t.Context(), j.ID, []string{"pypi.example.com:443", "*.npm.example.com"})
		if err != nil || !slices.Equal(got.Egress, []string{"pypi.example.com:443", "*.npm.example.com"}) || got.EgressSource != drydock.EgressFromJob {
			t.Fatalf("SetEgress: %+v %v", got, err)
		}
		if got, err = c.SetEgress(t.Context(), j.ID, nil); err != nil || len(got.Egress) != 0 {
			t.Fatalf("SetEgress(nil) must deny everything: %+v %v", got, err)
		}
		if _, err := c.SetEgress(t.Context(), j.ID, []string{"a b"}); drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("bad rule: %v", err)
		}
		if _, err := c.SetEgress(t.Context(), "../x", nil); err == nil {
			t.Error("a bad id was sent")
		}
		srv.SetStatus(t, j.ID, drydock.StatusRunning, "")
		srv.SetStatus(t, j.ID, drydock.StatusComplete, "")
		if _, err := c.SetEgress(t.Context(), j.ID, nil); drydock.ErrorCode(err) != drydock.ECONFLICT {
			t.Errorf("finished job: %v", err)
		}
	})
}
