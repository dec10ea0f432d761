package sqlstore_test

import (
	"encoding/base64"
	"slices"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

func TestCursorRoundTrips(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "x", "j1:nested"} {
		got, err := sqlstore.DecodeCursor(sqlstore.EncodeCursor(id))
		if err != nil || got != id {
			t.Errorf("cursor of %q decodes to %q, %v", id, got, err)
		}
	}
}

func TestCursorsNoStoreIssuedAreInvalid(t *testing.T) {
	t.Parallel()
	raw := base64.RawURLEncoding.EncodeToString
	for name, c := range map[string]string{
		"not base64":         "!!!",
		"padded base64":      base64.URLEncoding.EncodeToString([]byte("j1:ab")),
		"no version":         raw([]byte("abc")),
		"another version":    raw([]byte("j2:abc")),
		"a version, no id":   raw([]byte("j1:")),
		"standard alphabet":  base64.StdEncoding.EncodeToString([]byte("j1:\xfb\xff")),
		"empty after decode": "",
	} {
		if _, err := sqlstore.DecodeCursor(c); drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("%s (%q): %v, want invalid", name, c, err)
		}
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ asked, jobs, events int }{
		{0, sqlstore.DefaultListLimit, sqlstore.DefaultEventLimit},
		{-1, sqlstore.DefaultListLimit, sqlstore.DefaultEventLimit},
		{1, 1, 1},
		{sqlstore.MaxListLimit + 1, sqlstore.MaxListLimit, sqlstore.MaxListLimit + 1},
		{1 << 30, sqlstore.MaxListLimit, sqlstore.MaxEventLimit},
	} {
		if got := sqlstore.ListLimit(c.asked); got != c.jobs {
			t.Errorf("ListLimit(%d) = %d, want %d", c.asked, got, c.jobs)
		}
		if got := sqlstore.EventLimit(c.asked); got != c.events {
			t.Errorf("EventLimit(%d) = %d, want %d", c.asked, got, c.events)
		}
	}
}

func TestStatusesDropRepeatsInOrder(t *testing.T) {
	t.Parallel()
	got, err := sqlstore.Statuses([]drydock.JobStatus{drydock.StatusRunning, drydock.StatusPending, drydock.StatusRunning})
	if err != nil || !slices.Equal(got, []string{"running", "pending"}) {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := sqlstore.Statuses([]drydock.JobStatus{drydock.StatusRunning, "done"}); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Errorf("an unknown status: %v, want invalid", err)
	}
}

func TestPageSaysWhetherMoreFollow(t *testing.T) {
	t.Parallel()
	jobs := []*drydock.Job{{ID: "c"}, {ID: "b"}, {ID: "a"}}
	page, next := sqlstore.Page(jobs, 3)
	if len(page) != 3 || next != "" {
		t.Errorf("a last page: %d jobs, cursor %q", len(page), next)
	}
	page, next = sqlstore.Page(jobs, 2)
	if len(page) != 2 || page[1].ID != "b" {
		t.Fatalf("a full page: %d jobs", len(page))
	}
	if after, err := sqlstore.DecodeCursor(next); err != nil || after != "b" {
		t.Errorf("the next page starts after %q (%v), want b", after, err)
	}
}
