package sqlstore_test

import (
	"os/exec"
	"strings"
	"testing"
)

// What the stores share speaks no SQL dialect: a driver imported here would
// mean one store's types leaked into the other's code.
func TestNoDriverIsLinked(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH; the rule is checked with go list")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, driver := range []string{"database/sql", "github.com/jackc/", "modernc.org/", "github.com/pressly/goose"} {
			if strings.HasPrefix(dep, driver) {
				t.Errorf("store/sqlstore depends on %s: dialect code belongs in store/sqlite or store/postgres", dep)
			}
		}
	}
}
