package sqlstore_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// scanned is a JobRow whose columns are set by name, as a driver's Scan
// would set them.
type scanned struct {
	row  sqlstore.JobRow
	dest map[string]any
}

func newScanned(t *testing.T) *scanned {
	t.Helper()
	var times [6]any
	for i := range times {
		times[i] = new(string) // the store's own type; Decode never reads it
	}
	s := &scanned{dest: map[string]any{}}
	dest := s.row.Dest(sqlstore.JobTimes{
		Created: times[0], Started: times[1], Finished: times[2], LeaseExpires: times[3],
		PausedAt: times[4], ControlExpires: times[5],
	})
	cols := strings.Split(sqlstore.JobColumns, ",")
	if len(dest) != len(cols) {
		t.Fatalf("Dest has %d destinations for %d columns", len(dest), len(cols))
	}
	for i, c := range cols {
		s.dest[strings.TrimSpace(c)] = dest[i]
	}
	return s
}

func (s *scanned) set(col string, v any) {
	switch d := s.dest[col].(type) {
	case *string:
		*d = v.(string)
	case *int64:
		*d = v.(int64)
	case *[]byte:
		*d = v.([]byte)
	default:
		panic("set " + col)
	}
}

func TestJobRowDecodesTheColumns(t *testing.T) {
	t.Parallel()
	s := newScanned(t)
	s.set("id", "j")
	s.set("status", "running")
	s.set("profile", "desktop")
	s.set("timeout_ms", int64(90_000))
	s.set("paused_ms", int64(1_500))
	s.set("metadata", []byte(`{"team":"infra"}`))
	s.set("egress", []byte(`["pypi.org"]`))
	s.set("repo", []byte(`{"url":"https://git.example/r.git","ref":"main"}`))
	s.set("secret_names", []byte(`["TOKEN"]`))
	j, err := s.row.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != "j" || j.Status != drydock.StatusRunning || j.Profile != drydock.ProfileDesktop {
		t.Errorf("id, status, profile: %q %q %q", j.ID, j.Status, j.Profile)
	}
	if time.Duration(j.Timeout) != 90*time.Second || j.PausedTotal != 1500*time.Millisecond {
		t.Errorf("timeout %v, paused %v", time.Duration(j.Timeout), j.PausedTotal)
	}
	if j.Metadata["team"] != "infra" || !slices.Equal(j.Egress, []string{"pypi.org"}) || !slices.Equal(j.SecretNames, []string{"TOKEN"}) {
		t.Errorf("metadata %v, egress %v, secret names %v", j.Metadata, j.Egress, j.SecretNames)
	}
	if j.Repo == nil || j.Repo.URL != "https://git.example/r.git" || j.Repo.Ref != "main" {
		t.Errorf("repo %+v", j.Repo)
	}
}

func TestJobRowLeavesNullColumnsEmpty(t *testing.T) {
	t.Parallel()
	s := newScanned(t)
	s.set("id", "j")
	s.set("status", "pending")
	j, err := s.row.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if j.Metadata != nil || j.Egress != nil || j.Repo != nil || j.SecretNames != nil || j.Paused {
		t.Errorf("NULL columns decoded to %+v", j)
	}
}

func TestJobRowNamesACorruptColumn(t *testing.T) {
	t.Parallel()
	for _, col := range []string{"metadata", "egress", "repo", "secret_names"} {
		s := newScanned(t)
		s.set("id", "j")
		s.set(col, []byte(`{`))
		_, err := s.row.Decode()
		want := "stored " + strings.ReplaceAll(col, "_", " ") + " of job j"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("corrupt %s: %v, want it named (%q)", col, err, want)
		}
	}
}

func TestNewJobEncodesTheJSONColumns(t *testing.T) {
	t.Parallel()
	cols, err := sqlstore.NewJob(&drydock.Job{ID: "j"})
	if err != nil {
		t.Fatal(err)
	}
	if cols != (sqlstore.JobJSON{}) {
		t.Errorf("a job without lists stores %+v, want NULLs", cols)
	}
	cols, err = sqlstore.NewJob(&drydock.Job{ID: "j", JobSpec: drydock.JobSpec{
		Metadata: map[string]string{"a": "1"}, Egress: []string{"pypi.org"},
		Repo: &drydock.RepoSpec{URL: "https://git.example/r.git"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		got  *string
		want string
	}{
		"metadata": {cols.Metadata, `{"a":"1"}`},
		"egress":   {cols.Egress, `["pypi.org"]`},
		"repo":     {cols.Repo, `{"url":"https://git.example/r.git"}`},
	} {
		if c.got == nil || *c.got != c.want {
			t.Errorf("%s column: %v, want %s", name, c.got, c.want)
		}
	}
	if _, err := sqlstore.NewJob(&drydock.Job{}); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Errorf("a job without an id: %v, want invalid", err)
	}
	unsealed := &drydock.Job{ID: "j", JobSpec: drydock.JobSpec{Secrets: drydock.SecretValues{"TOKEN": "v"}}}
	if _, err := sqlstore.NewJob(unsealed); err == nil {
		t.Error("a job with secrets not sealed was accepted")
	}
}
