package main

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// The environment that turns the egress forwarder on (runtime/docker sets
// both): the sandbox's processes reach the network only through the host's
// egress proxy (package egress), whose socket is mounted at
// TOOLBOXD_EGRESS_SOCKET; toolboxd offers it to them on the sandbox's own
// loopback at TOOLBOXD_EGRESS_LISTEN, which their HTTP_PROXY names.
const (
	envEgressListen = "TOOLBOXD_EGRESS_LISTEN"
	envEgressSocket = "TOOLBOXD_EGRESS_SOCKET"
)

// maxEgressConns bounds the connections forwarded at once; the host's proxy
// has its own, usually lower, limit.
const maxEgressConns = 512

// startEgress forwards connections from listen to the unix socket when
// both are set, and returns the address it listens on (nil when off); stop
// closes the listener and every connection and waits for them.
func startEgress(listen, socket string, log *slog.Logger) (addr net.Addr, stop func(), err error) {
	if listen == "" || socket == "" {
		return nil, func() {}, nil
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, nil, err
	}
	f := &forwarder{socket: socket, log: log.With("component", "egress"), conns: map[net.Conn]struct{}{}, slots: make(chan struct{}, maxEgressConns)}
	f.wg.Add(1)
	go f.serve(ln)
	log.Info("egress forwarder listening", "address", ln.Addr().String(), "proxy", socket)
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
	socket string
	log    *slog.Logger
	slots  chan struct{}
	wg     sync.WaitGroup

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
	up, err := net.DialTimeout("unix", f.socket, 5*time.Second)
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
