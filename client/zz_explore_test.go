package client_test

import (
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

func TestZZExplore2(t *testing.T) {
	for _, s := range servers {
		srv := s.start(t)
		c := client.New(srv.URL(), srv.Token())
		j := srv.AddJob(t, drydock.JobSpec{Task: "p"}, time.Now())
		srv.SetStatus(t, j.ID, drydock.StatusRunning, "")
		c.SetEgress(t.Context(), j.ID, []string{"a.com"})
		c.SendMessage(t.Context(), j.ID, "hello")
		c.Pause(t.Context(), j.ID)
		c.Resume(t.Context(), j.ID)
		got, _ := c.Cancel(t.Context(), j.ID)
		t.Logf("%s cancel running: %+v", s.name, got.Status)
		p, _ := c.Events(t.Context(), j.ID, 0, 100)
		for _, e := range p.Events {
			t.Logf("%s %d %s %s", s.name, e.Seq, e.Type, e.Data)
		}
		jj, _ := c.Job(t.Context(), j.ID)
		t.Logf("%s job: %+v", s.name, jj)
	}
}
