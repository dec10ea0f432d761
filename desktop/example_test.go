package desktop_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/drydockhq/drydock/desktop"
)

// Start the desktop, click where the model pointed on a screenshot, and
// serve the VNC bridge for noVNC.
func Example() {
	ctx := context.Background()
	d := desktop.New(desktop.Config{VNCPassword: "per-job-secret"}, slog.Default())
	if err := d.Start(ctx); err != nil {
		fmt.Println("no desktop:", err)
		return
	}
	defer d.Close()
	if err := d.WaitReady(ctx); err != nil {
		fmt.Println(err)
		return
	}
	png, scale, err := d.Screenshot(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(png) > 0, scale)
	// Coordinates are in screenshot space; the desktop maps them back.
	_, err = d.Do(ctx, desktop.Action{Action: desktop.ActionLeftClick, Coordinate: &desktop.Point{X: 640, Y: 400}})
	if err != nil {
		fmt.Println(err)
	}
	http.Handle("/desktop/vnc", d.VNCHandler())
}
