package desktop

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/coder/websocket"
)

// VNCHandler returns a handler that upgrades to a WebSocket and carries RFB
// bytes between the client (noVNC) and x11vnc, both ways, as they arrive.
//
// It checks no credentials and no Origin: toolboxd authenticates the request
// with its bearer token before it gets here, and a bearer token (unlike a
// cookie) is not something a foreign page can make a browser send, so
// cross-site WebSocket hijacking has nothing to ride on. The VNC password is
// still asked by x11vnc inside the RFB stream.
func (d *Desktop) VNCHandler() http.Handler {
	return http.HandlerFunc(d.serveVNC)
}

func (d *Desktop) serveVNC(w http.ResponseWriter, r *http.Request) {
	// Counted only when served: a bridge counted but refused would keep
	// Close waiting for good (viewers do come while x11vnc starts).
	d.mu.Lock()
	life := d.ctx
	serve := !d.closed && life != nil && d.vnc.ready.Load()
	if serve {
		d.bridges.Add(1)
	}
	d.mu.Unlock()
	if !serve {
		http.Error(w, "vnc is not ready", http.StatusServiceUnavailable)
		return
	}
	defer d.bridges.Done()

	// Dial first so that a dead VNC server is an HTTP error the client can
	// see, not a WebSocket that closes at once.
	backend, err := d.dialVNC(r.Context())
	if err != nil {
		d.log.Warn("vnc bridge: dial vnc server", "err", err)
		http.Error(w, "vnc is not reachable", http.StatusBadGateway)
		return
	}
	defer backend.Close()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:       []string{"binary"},
		InsecureSkipVerify: true,
		// RFB frames are already encoded (and often compressed) by x11vnc;
		// deflating them again costs CPU for little.
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		// Accept has written the HTTP error.
		return
	}
	ctx, cancel := context.WithCancel(life)
	defer cancel()
	client := websocket.NetConn(ctx, ws, websocket.MessageBinary)

	errc := make(chan error, 2)
	go func() { _, err := io.Copy(client, backend); errc <- err }()
	go func() { _, err := io.Copy(backend, client); errc <- err }()
	err = <-errc
	if err != nil && !isClosed(err) {
		d.log.Debug("vnc bridge ended", "err", err)
	}
	if life.Err() != nil {
		_ = ws.CloseNow()
	} else {
		_ = ws.Close(websocket.StatusNormalClosure, "")
	}
	backend.Close()
	cancel()
	<-errc
}

func isClosed(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, context.Canceled) ||
		websocket.CloseStatus(err) == websocket.StatusNormalClosure ||
		websocket.CloseStatus(err) == websocket.StatusGoingAway
}
