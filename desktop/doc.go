// Package desktop runs the sandbox's graphical desktop for toolboxd: it
// supervises Xvfb, a light window manager and x11vnc (restarting any that
// dies, with backoff), reports readiness per component, performs the
// computer-tool actions with xdotool, takes screenshots scaled to fit
// 1280x800, and bridges VNC to WebSocket clients such as noVNC.
//
// It runs inside the sandbox as an unprivileged user and uses only the
// standard library and coder/websocket, so toolboxd stays a static binary.
//
//	d := desktop.New(desktop.Config{VNCPassword: pw}, logger)
//	if err := d.Start(ctx); err != nil { ... }
//	defer d.Close()
//	_ = d.WaitReady(ctx)
//	png, scale, err := d.Screenshot(ctx)
//	_, err = d.Do(ctx, desktop.Action{Action: "left_click", Coordinate: &desktop.Point{X: 100, Y: 200}})
//	mux.Handle("/desktop/vnc", d.VNCHandler())
package desktop
