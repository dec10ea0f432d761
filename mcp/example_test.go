package mcp_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
	"github.com/drydockhq/drydock/client/clienttest"
	"github.com/drydockhq/drydock/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP client connected to the server (here over the SDK's in-memory
// transport; drydock mcp uses stdio, the API server Streamable HTTP) calls
// a tool, which the server answers through the API's Go client.
func ExampleNewServer() {
	api := clienttest.NewServer() // a stand-in for a running drydock server
	defer api.Close()
	job := api.AddJob(drydock.JobSpec{Task: "Build me a todo app"}, time.Now())

	c := client.New(api.URL, "")
	server := mcp.NewServer(func(http.Header) *client.Client { return c }, mcp.Options{Version: "example"})
	ctx := context.Background()
	serverEnd, clientEnd := sdk.NewInMemoryTransports()
	if _, err := server.Connect(ctx, serverEnd, nil); err != nil {
		log.Fatal(err)
	}
	session, err := sdk.NewClient(&sdk.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "get_job", Arguments: map[string]any{"job_id": job.ID}})
	if err != nil {
		log.Fatal(err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	fmt.Println(strings.Contains(text, "Job "+job.ID), strings.Contains(text, "status: pending"))
	// Output: true true
}
