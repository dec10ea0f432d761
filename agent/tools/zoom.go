package tools

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/draw"
	"image/png"

	"github.com/drydockhq/drydock/llm"
)

// zoom shows a region of the screen enlarged to fit the display, for the
// built-in computer tool's zoom action (computer_20251124): small text and
// icons become legible without changing the coordinates of the screen,
// which stay those of the full screenshot.
func (c *computer) zoom(ctx context.Context, region []int) Result {
	if len(region) != 4 {
		return errorf("computer: zoom needs region [x0, y0, x1, y1]")
	}
	x0, y0, x1, y1 := region[0], region[1], region[2], region[3]
	if x0 < 0 || y0 < 0 || x1 <= x0 || y1 <= y0 {
		return errorf("computer: zoom region [%d, %d, %d, %d] must have x0 < x1 and y0 < y1, from the top left", x0, y0, x1, y1)
	}
	shot, err := c.env.Box.Screenshot(ctx)
	if err != nil {
		return desktopFailure("zoom", err)
	}
	src, err := png.Decode(bytes.NewReader(shot.PNG))
	if err != nil {
		return errorf("computer: zoom: the screenshot is not a PNG: %v", err)
	}
	b := src.Bounds()
	if x1 > b.Dx() || y1 > b.Dy() {
		return errorf("computer: zoom region [%d, %d, %d, %d] is outside the %dx%d screen", x0, y0, x1, y1, b.Dx(), b.Dy())
	}
	w, h := x1-x0, y1-y0
	// The largest whole factor that fits the display: pixels stay sharp
	// squares, which keeps text crisp.
	f := max(1, min(c.env.DisplayWidth/w, c.env.DisplayHeight/h))
	dst := image.NewRGBA(image.Rect(0, 0, w*f, h*f))
	rgba := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(rgba, rgba.Rect, src, image.Pt(b.Min.X+x0, b.Min.Y+y0), draw.Src)
	for y := range h * f {
		srow := rgba.Pix[(y/f)*rgba.Stride:]
		drow := dst.Pix[y*dst.Stride:]
		for x := range w * f {
			copy(drow[x*4:x*4+4], srow[(x/f)*4:(x/f)*4+4])
		}
	}
	var out bytes.Buffer
	if err := png.Encode(&out, dst); err != nil {
		return errorf("computer: zoom: %v", err)
	}
	return Result{
		Output: fmt.Sprintf("Zoomed into [%d, %d, %d, %d] of the screen, enlarged %dx to %dx%d. Coordinates for actions stay those of the full screenshot.", x0, y0, x1, y1, f, w*f, h*f),
		Images: []Image{{Image: llm.Image{MediaType: "image/png", Data: out.Bytes()}, Width: w * f, Height: h * f}},
	}
}
