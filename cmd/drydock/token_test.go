package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// tokenCLI runs one `drydock token ...` command line on a data directory.
func tokenCLI(t *testing.T, dataDir string, args ...string) (stdout, stderr string) {
	t.Helper()
	var c struct {
		Globals
		Token TokenCmd `cmd:""`
	}
	var out, errb bytes.Buffer
	c.Out, c.Err = &out, &errb
	parser, err := kong.New(&c, kong.Name("drydock"), kong.Vars{"data_dir": dataDir}, kong.Exit(func(int) { t.Fatalf("kong exited on %q", args) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := parser.Parse(append([]string{"token"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.Run(&c.Globals); err != nil {
		t.Fatalf("token %q: %v", args, err)
	}
	return out.String(), errb.String()
}

// The token commands say when they switch development mode, since a
// running server follows the store at once.
func TestTokenCommandsSayWhenDevelopmentModeChanges(t *testing.T) {
	dir := t.TempDir()
	_, msg := tokenCLI(t, dir, "create", "--admin", "--name", "first")
	if !strings.Contains(msg, "Development mode is now off") {
		t.Errorf("first token create said %q; want it to say development mode is off", msg)
	}
	_, msg = tokenCLI(t, dir, "create", "--name", "second", "--json")
	if strings.Contains(msg, "Development mode") {
		t.Errorf("second token create said %q; development mode was already off", msg)
	}
	out, _ := tokenCLI(t, dir, "list", "--json")
	var list []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 2 {
		t.Fatalf("token list: %s %v", out, err)
	}
	ids := []string{list[0].ID, list[1].ID}
	if _, msg := tokenCLI(t, dir, "revoke", ids[0]); strings.Contains(msg, "No token remains") {
		t.Errorf("revoking one of two tokens said %q", msg)
	}
	if _, msg := tokenCLI(t, dir, "revoke", ids[1]); !strings.Contains(msg, "No token remains") || !strings.Contains(msg, "development mode") {
		t.Errorf("revoking the last token said %q; want it to say development mode is back on loopback", msg)
	}
}
