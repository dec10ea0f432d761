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

	"github.com/drydockhq/drydock/toolbox"
)

func socketEnv(sock string) func(string) string {
	return mapEnv(map[string]string{toolbox.EnvEgressListen: "127.0.0.1:0", toolbox.EnvEgressSocket: sock})
}

func mapEnv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// throughForwarder sends a CONNECT through the forwarder at addr, ends its
// side, and returns all that came back.
func throughForwarder(t *testing.T, addr net.Addr) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "CONNECT example.com:443 HTTP/1.1\r\n\r\n")
	c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read through the forwarder: %v", err)
	}
	return string(b)
}

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
	addr, stop, err := startEgress(socketEnv(sock), "tok", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if got := throughForwarder(t, addr); !strings.HasPrefix(got, "proxy got: CONNECT example.com:443") {
		t.Fatalf("got %q", got)
	}
}

func TestEgressForwarderWithoutAProxySaysSo(t *testing.T) {
	t.Parallel()
	addr, stop, err := startEgress(socketEnv(filepath.Join(t.TempDir(), "missing.sock")), "tok", slog.New(slog.DiscardHandler))
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
	addr, stop, err := startEgress(socketEnv(sock), "tok", slog.New(slog.DiscardHandler))
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

func TestEgressForwarderSendsTheHelloToTheGateway(t *testing.T) {
	t.Parallel()
	gw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	go func() {
		for {
			c, err := gw.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				line, _ := r.ReadString('\n')
				id, verify, err := toolbox.ParseEgressHello(line)
				if err != nil || !verify("the-token") {
					io.WriteString(c, "refused")
					return
				}
				b, _ := io.ReadAll(r)
				io.WriteString(c, "gateway got "+id+": "+string(b))
			}()
		}
	}()
	env := mapEnv(map[string]string{
		toolbox.EnvEgressListen:  "127.0.0.1:0",
		toolbox.EnvEgressGateway: gw.Addr().String(),
		toolbox.EnvSandboxID:     "drydock-0123456789abcdef",
	})
	addr, stop, err := startEgress(env, "the-token", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if got := throughForwarder(t, addr); got != "gateway got drydock-0123456789abcdef: CONNECT example.com:443 HTTP/1.1\r\n\r\n" {
		t.Fatalf("got %q", got)
	}
}

func TestEgressForwarderRefusesTwoWaysOut(t *testing.T) {
	t.Parallel()
	env := mapEnv(map[string]string{
		toolbox.EnvEgressListen:  "127.0.0.1:0",
		toolbox.EnvEgressSocket:  "/x.sock",
		toolbox.EnvEgressGateway: "127.0.0.1:1",
		toolbox.EnvSandboxID:     "drydock-0123456789abcdef",
	})
	if _, _, err := startEgress(env, "t", slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("both a socket and a gateway were accepted")
	}
	env = mapEnv(map[string]string{toolbox.EnvEgressListen: "127.0.0.1:0", toolbox.EnvEgressGateway: "127.0.0.1:1"})
	if _, _, err := startEgress(env, "t", slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), toolbox.EnvSandboxID) {
		t.Fatalf("a gateway without a sandbox id: %v", err)
	}
}
