package main

import (
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// Flags that would make the server misbehave stop it at start with a
// message naming the flag, before it opens anything.
func TestServerRefusesBadIntervals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--reap-interval", "0s"}, "--reap-interval 0s: want at least 1s"},
		{[]string{"--reap-interval=-5m"}, "--reap-interval -5m0s: want at least 1s"},
	} {
		var sc ServerCmd
		dir := t.TempDir()
		parser, err := kong.New(&sc, kong.Vars{"data_dir": dir}, kong.Exit(func(int) { t.Fatalf("kong exited on %q", tt.args) }))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.Parse(append(tt.args, "--listen", "127.0.0.1:0")); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		err = sc.Run(&Globals{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want an error saying %q", tt.args, err, tt.want)
		}
	}
}
