package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/drydockhq/drydock/toolbox"
)

// maxEgressConns bounds the connections forwarded at once; the host's proxy
// has its own, usually lower, limit.
const maxEgressConns = 512

// startEgress starts the forwarder the environment asks for (see
// toolbox.EnvEgressListen): to the proxy's unix socket, or to the
// orchestrator's gateway with a hello made from token. It returns the
// address it listens on (nil when off); stop closes the listener and every
// connection and waits for them. The hello is made from the token toolboxd
// started with: a sandbox reached through a gateway is never claimed (only
// the Docker runtime's warm pool claims, and it uses the socket), and a
// stale hello would fail closed.
func startEgress(getenv func(string) string, token string, log *slog.Logger) (addr net.Addr, stop func(), err error) {
	listen, socket, gateway := getenv(toolbox.EnvEgressListen), getenv(toolbox.EnvEgressSocket), getenv(toolbox.EnvEgressGateway)
	if listen == "" {
		return nil, func() {}, nil
	}
	var dial func() (net.Conn, error)
	var to string
	switch {
	case socket != "" && gateway != "":
		return nil, nil, fmt.Errorf("%s and %s are both set; a sandbox has one way out", toolbox.EnvEgressSocket, toolbox.EnvEgressGateway)
	case socket != "":
		to = socket
		dial = func() (net.Conn, error) { return net.DialTimeout("unix", socket, 5*time.Second) }
	case gateway != "":
		id := getenv(toolbox.EnvSandboxID)
		if id == "" {
			return nil, nil, fmt.Errorf("%s is set but %s is not: the gateway needs to know the sandbox", toolbox.EnvEgressGateway, toolbox.EnvSandboxID)
		}
		to = gateway
		hello := toolbox.EgressHello(toolbox.TokenHash(token), id)
		dial = func() (net.Conn, error) {
			c, err := net.DialTimeout("tcp", gateway, 5*time.Second)
			if err != nil {
				return nil, err
			}
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(c, hello); err != nil {
				c.Close()
				return nil, err
			}
			c.SetWriteDeadline(time.Time{})
			return c, nil
		}
	default:
		return nil, func() {}, nil
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, nil, err
	}
	f := &forwarder{dial: dial, log: log.With("component", "egress"), conns: map[net.Conn]struct{}{}, slots: make(chan struct{}, maxEgressConns)}
	f.wg.Add(1)
	go f.serve(ln)
	log.Info("egress forwarder listening", "address", ln.Addr().String(), "proxy", to)
	return ln.Addr(), func() {
		ln.Close()
		f.mu.Lock()
		f.closed = true
		for c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	}, nil
}

type forwarder struct {
	dial  func() (net.Conn, error)
	log   *slog.Logger
	slots chan struct{}
	wg    sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func (f *forwarder) serve(ln net.Listener) {
	defer f.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			f.log.Warn("egress accept", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		select {
		case f.slots <- struct{}{}:
		default:
			answer(c, "503 Service Unavailable", "too many connections open from this sandbox")
			continue
		}
		if !f.add(c) {
			c.Close()
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer func() { <-f.slots }()
			defer f.remove(c)
			f.forward(c)
		}()
	}
}

func (f *forwarder) add(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *forwarder) remove(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

// answer writes a complete HTTP error answer, which is what a proxy client
// expects on its first read, and closes c.
func answer(c net.Conn, status, msg string) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	io.WriteString(c, "HTTP/1.1 "+status+"\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n\r\ndrydock egress: "+msg+"\n")
	c.Close()
}

func (f *forwarder) forward(c net.Conn) {
	up, err := f.dial()
	if err != nil {
		// No proxy: the sandbox has no job yet, or the orchestrator is
		// restarting. Nothing may leave the sandbox either way.
		answer(c, "502 Bad Gateway", "the orchestrator's egress proxy for this sandbox is not running (no job attached, or the orchestrator is restarting); try again")
		return
	}
	if !f.add(up) {
		up.Close()
		return
	}
	defer f.remove(up)
	done := make(chan struct{})
	go func() {
		defer close(done)
		halfCopy(up, c)
	}()
	halfCopy(c, up)
	<-done
}

// halfCopy copies until src ends, then passes the end on as a half-close
// (or closes dst when it cannot).
func halfCopy(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
		if cw.CloseWrite() == nil {
			return
		}
	}
	dst.Close()
	src.Close()
}
