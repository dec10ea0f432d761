package drydock_test

import (
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// agent is omitted (the server's agent) or "none" (a held sandbox, which
// needs no task and cannot be interactive).
func TestJobSpecAgent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		spec drydock.JobSpec
		want string // "" when valid
	}{
		{"server's agent", drydock.JobSpec{Task: "x"}, ""},
		{"none without a task", drydock.JobSpec{Agent: " none "}, ""},
		{"none with a task", drydock.JobSpec{Agent: "none", Task: "notes for myself"}, ""},
		{"unknown agent", drydock.JobSpec{Agent: "codex", Task: "x"}, "agent must be"},
		{"none and interactive", drydock.JobSpec{Agent: "none", Interactive: true}, "interactive needs an agent"},
		{"an agent needs a task", drydock.JobSpec{}, "task is required"},
	} {
		c.spec.Normalize()
		err := c.spec.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v; want an error naming %q", c.name, err, c.want)
		}
	}
}
