package hostclient

import (
	"strings"
	"sync"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// maxClients bounds Clients: sandboxes come and go, and a server that only
// views sandboxes of other replicas never learns when they end, so past
// this many the idle connections are dropped and the set starts over.
// Requests in flight keep their connections.
const maxClients = 256

// Clients keeps one toolbox.Client, and so one set of kept-alive
// connections, per sandbox, for everything in the orchestrator that talks
// to toolboxd (the runner, the agent's tools, the API's proxies).
type Clients struct {
	mu sync.Mutex
	m  map[string]*toolbox.Client
}

// NewClients returns an empty set.
func NewClients() *Clients { return &Clients{m: map[string]*toolbox.Client{}} }

// Get returns the client of sb, creating it on first use. A sandbox whose
// endpoint or token changed (a claim replaces the token) gets a new client.
func (c *Clients) Get(sb *drydock.Sandbox) *toolbox.Client {
	key := sb.ID + "\x00" + sb.Endpoint.Network + "\x00" + sb.Endpoint.Address + "\x00" + sb.Token
	c.mu.Lock()
	defer c.mu.Unlock()
	if tc, ok := c.m[key]; ok {
		return tc
	}
	if len(c.m) >= maxClients {
		for k, tc := range c.m {
			tc.Close()
			delete(c.m, k)
		}
	}
	tc := toolbox.New(sb.Endpoint, sb.Token)
	c.m[key] = tc
	return tc
}

// Forget drops the clients of a sandbox, e.g. when it is destroyed.
func (c *Clients) Forget(sandboxID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, tc := range c.m {
		if strings.HasPrefix(k, sandboxID+"\x00") {
			tc.Close()
			delete(c.m, k)
		}
	}
}
