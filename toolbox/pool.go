package toolbox

import (
	"strings"
	"sync"

	"github.com/drydockhq/drydock"
)

// maxPooled bounds a Pool: sandboxes come and go, and a server that only
// views sandboxes of other replicas never learns when they end, so past
// this many the idle connections are dropped and the pool starts over.
// Requests in flight keep their connections.
const maxPooled = 256

// Pool keeps one Client, and so one set of kept-alive connections, per
// sandbox, for everything in the orchestrator that talks to toolboxd.
type Pool struct {
	mu sync.Mutex
	m  map[string]*Client
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{m: map[string]*Client{}} }

// Get returns the client of sb, creating it on first use.
func (p *Pool) Get(sb *drydock.Sandbox) *Client {
	key := sb.ID + "\x00" + sb.Endpoint.Network + "\x00" + sb.Endpoint.Address + "\x00" + sb.Token
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.m[key]; ok {
		return c
	}
	if len(p.m) >= maxPooled {
		for k, c := range p.m {
			c.Close()
			delete(p.m, k)
		}
	}
	c := New(sb.Endpoint, sb.Token)
	p.m[key] = c
	return c
}

// Forget drops the clients of a sandbox, e.g. when it is destroyed.
func (p *Pool) Forget(sandboxID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, c := range p.m {
		if strings.HasPrefix(k, sandboxID+"\x00") {
			c.Close()
			delete(p.m, k)
		}
	}
}
