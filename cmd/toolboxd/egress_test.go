package main

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEgressForwarderPipesToTheProxySocket(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	proxy, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	go func() {
		for {
			c, err := proxy.Accept()
			if err != nil {
				return
			}
			// Answers after the client half-closed, as a proxy relaying a
			// request-then-read protocol would.
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				io.WriteString(c, "proxy got: "+string(b))
			}()
		}
	}()
	addr, stop, err := startEgress("127.0.0.1:0", sock, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "CONNECT example.com:443 HTTP/1.1\r\n\r\n")
	c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil || !strings.HasPrefix(string(b), "proxy got: CONNECT example.com:443") {
		t.Fatalf("got %q, %v", b, err)
	}
}

func TestEgressForwarderWithoutAProxySaysSo(t *testing.T) {
	t.Parallel()
	addr, stop, err := startEgress("127.0.0.1:0", filepath.Join(t.TempDir(), "missing.sock"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 502") {
		t.Fatalf("got %q, %v", line, err)
	}
}

func TestEgressForwarderStopClosesOpenConnections(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	proxy, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	go func() {
		for {
			c, err := proxy.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(io.Discard, c) }() // never answers
		}
	}()
	addr, stop, err := startEgress("127.0.0.1:0", sock, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "x")
	time.Sleep(50 * time.Millisecond)
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("stop hung on an open connection")
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("connection still open after stop")
	}
}
