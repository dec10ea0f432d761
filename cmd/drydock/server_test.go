package main

import (
	"io"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// Flags that would make the server misbehave stop it at start with a
// message naming the flag, before it opens anything.
func TestServerRefusesBadFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--reap-interval", "0s"}, "--reap-interval 0s: want at least 1s"},
		{[]string{"--reap-interval=-5m"}, "--reap-interval -5m0s: want at least 1s"},
		{[]string{"--egress-default", "registry.example.com:99999"}, `--egress-default: egress destination "registry.example.com:99999": the port must be`},
		{[]string{"--egress-default", "a.example.com,bad host"}, `--egress-default: egress destination "bad host"`},
		{[]string{"--egress-allow", "*.example.com:x"}, `--egress-allow: egress destination "*.example.com:x"`},
		{[]string{"--egress-default", "registry.example.com", "--egress-allow", "*.example.com:443"}, "--egress-default: registry.example.com is outside the ceiling *.example.com:443"},
		{[]string{"--runtime", "kubernetes", "--egress-default", "registry.example.com"}, "--egress-default needs --kube-egress-gateway"},
		{[]string{"--sandbox-ca", "/nonexistent/a.crt,/nonexistent/b.crt"}, "--sandbox-ca /nonexistent/a.crt: open"},
		{[]string{"--openai-reasoning-effort", "gpt-5=extreme"}, `--openai-reasoning-effort: reasoning effort "extreme"`},
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

// The sandbox limits have names a person would type, and the names kong
// once derived from the field names still parse.
func TestSandboxResourceFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--sandbox-cpus", "0.5", "--sandbox-memory-mib", "1024", "--sandbox-disk-mib", "256"},
		{"--sandbox-cp-us", "0.5", "--sandbox-memory-mi-b", "1024", "--sandbox-disk-mi-b", "256"},
	} {
		var c struct {
			Resources ResourceOptions `embed:"" prefix:"sandbox-"`
		}
		p, err := kong.New(&c, kong.Exit(func(int) { t.Fatal("exit") }), kong.Writers(io.Discard, io.Discard))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Parse(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if want := (ResourceOptions{CPUs: 0.5, MemoryMiB: 1024, DiskMiB: 256, Pids: 1024}); c.Resources != want {
			t.Errorf("%v parsed as %+v; want %+v", args, c.Resources, want)
		}
	}
}
