package toolbox_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/toolbox/server"
)

// A client drives a toolboxd over its unix socket: files, then a persistent
// shell session.
func Example() {
	dir, _ := os.MkdirTemp("", "toolbox-example-")
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "workspace")
	os.Mkdir(ws, 0o755)

	// What cmd/toolboxd does inside a sandbox.
	srv := server.New(server.Config{Workspace: ws, Token: "secret"}, nil)
	defer srv.Close()
	ln, _ := net.Listen("unix", filepath.Join(dir, "toolbox.sock"))
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	defer hs.Close()

	ctx := context.Background()
	c := toolbox.New(drydock.Endpoint{Network: "unix", Address: ln.Addr().String()}, "secret")
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		fmt.Println(err)
		return
	}
	c.WriteFile(ctx, "hello.txt", []byte("hello from the workspace\n"))
	c.CreateSession(ctx, toolbox.SessionRequest{ID: "main"})
	c.Run(ctx, "main", toolbox.RunRequest{Command: "export GREETING=hi"})
	res, _ := c.Run(ctx, "main", toolbox.RunRequest{Command: "echo $GREETING; cat hello.txt"})
	fmt.Print(res.Output)
	fmt.Println("exit code:", res.ExitCode)
	// Output:
	// hi
	// hello from the workspace
	// exit code: 0
}
