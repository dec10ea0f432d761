package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// The real binary continues a finished job: drydock follow-up --wait ends
// with the follow-up's status, whose workspace holds the parent's files,
// and drydock status shows the thread both ways.
func TestCLIFollowUp(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.start()
	out, stderr, err := s.cli("schedule", "write notes [fake:steps=2]", "--wait", "--json")
	if err != nil {
		t.Fatalf("schedule --wait: %v\n%s%s", err, out, stderr)
	}
	var parent drydock.Job
	if err := json.Unmarshal([]byte(out), &parent); err != nil || parent.Status != drydock.StatusComplete {
		t.Fatalf("parent: %v %s", err, out)
	}
	out, stderr, err = s.cli("follow-up", parent.ID, "one more note [fake:steps=1]", "--wait", "--json")
	if err != nil {
		t.Fatalf("follow-up --wait: %v\n%s%s", err, out, stderr)
	}
	var child drydock.Job
	if err := json.Unmarshal([]byte(out), &child); err != nil || child.Status != drydock.StatusComplete || child.ParentJobID != parent.ID {
		t.Fatalf("follow-up: %v %s", err, out)
	}
	code, data := s.do("GET", "/v1/jobs/"+child.ID+"/files/notes/step-002.md", "", "")
	if code != 200 || len(data) == 0 {
		t.Errorf("the follow-up's workspace lacks the parent's second note: %d %s", code, data)
	}
	out, _, err = s.cli("status", parent.ID)
	if err != nil || !strings.Contains(out, "Follow-ups: "+child.ID) {
		t.Errorf("status of the parent: %v\n%s", err, out)
	}
	out, _, err = s.cli("status", child.ID)
	if err != nil || !strings.Contains(out, "Follows up: "+parent.ID) {
		t.Errorf("status of the follow-up: %v\n%s", err, out)
	}
	if _, stderr, err := s.cli("follow-up", "0193e2e0-0000-7000-8000-000000000000", "hello"); err == nil || !strings.Contains(stderr, "not found") {
		t.Errorf("follow-up of an unknown job: %v %s", err, stderr)
	}
}
