package sqlstore

import (
	"encoding/base64"
	"slices"
	"strings"

	"github.com/drydockhq/drydock"
)

// Page sizes of ListJobs and ListEvents: a request that asks for none gets
// the default, one that asks for more gets the maximum.
const (
	DefaultListLimit  = 50
	MaxListLimit      = 500
	DefaultEventLimit = 100
	MaxEventLimit     = 1000
)

// ListLimit is the page size of a job list that asked for n.
func ListLimit(n int) int { return clamp(n, DefaultListLimit, MaxListLimit) }

// EventLimit is the page size of an event list that asked for n.
func EventLimit(n int) int { return clamp(n, DefaultEventLimit, MaxEventLimit) }

func clamp(n, def, most int) int {
	if n <= 0 {
		return def
	}
	return min(n, most)
}

// Statuses checks a job list's status filter and drops repeats, which keeps
// the query small whatever the request repeats.
func Statuses(list []drydock.JobStatus) ([]string, error) {
	var out []string
	for _, st := range list {
		if !st.Valid() {
			return nil, drydock.Errorf(drydock.EINVALID, "unknown job status %q", st)
		}
		if !slices.Contains(out, string(st)) {
			out = append(out, string(st))
		}
	}
	return out, nil
}

// A job list is paged by descending id (UUIDv7, so newest first), and the
// cursor is the last id of a page. It has one form for both stores, so it
// means the same whichever issued it, and it is versioned so its form can
// change without old cursors being misread.
const cursorPrefix = "j1:"

// EncodeCursor is the cursor of a page whose last job is id.
func EncodeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + id))
}

// DecodeCursor returns the id a cursor continues after.
func DecodeCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), cursorPrefix) || len(b) == len(cursorPrefix) {
		return "", InvalidCursor()
	}
	return string(b[len(cursorPrefix):]), nil
}

// InvalidCursor is the error of a cursor no store issued.
func InvalidCursor() error { return drydock.Errorf(drydock.EINVALID, "invalid cursor") }

// Page ends a job list that read up to limit+1 rows: the extra row only
// says that a next page exists, and the cursor to it.
func Page(jobs []*drydock.Job, limit int) ([]*drydock.Job, string) {
	if len(jobs) <= limit {
		return jobs, ""
	}
	jobs = jobs[:limit]
	return jobs, EncodeCursor(jobs[len(jobs)-1].ID)
}
