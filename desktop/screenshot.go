package desktop

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"sync"
)

// Shot is one screenshot.
type Shot struct {
	PNG []byte
	// Width and Height are the image's size; ScreenWidth and ScreenHeight
	// the screen's.
	Width, Height             int
	ScreenWidth, ScreenHeight int
	// Scale is image pixels per screen pixel (at most 1): screen point
	// (x, y) is (x*Scale, y*Scale) in the image, and image point (u, v) is
	// (u/Scale, v/Scale) on the screen.
	Scale float64
}

// Screenshot captures the screen as a PNG no larger than MaxWidth x
// MaxHeight and returns the factor by which it was scaled (see Shot.Scale).
func (d *Desktop) Screenshot(ctx context.Context) (pngData []byte, scale float64, err error) {
	s, err := d.Capture(ctx)
	if err != nil {
		return nil, 0, err
	}
	return s.PNG, s.Scale, nil
}

// Capture takes a screenshot (see Screenshot) and reports its geometry.
//
// It reads the framebuffer that Xvfb keeps in a memory-mapped XWD file
// (-fbdir) and encodes it in process: no process is spawned, which makes it
// several times faster than `import` or `xwd`. If that file is missing (the
// display is not one this package started), it falls back to `xwd -root`.
// A display still starting or restarting is waited for, up to DisplayWait:
// the agent's first screenshot often comes before it is up.
func (d *Desktop) Capture(ctx context.Context) (*Shot, error) {
	if err := d.waitDisplay(ctx); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(d.fbFile())
	if errors.Is(err, os.ErrNotExist) {
		raw, err = d.xwdCapture(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("capture screen: %w", err)
	}
	img, err := decodeXWD(raw)
	if err != nil {
		return nil, fmt.Errorf("decode screen: %w", err)
	}
	shot := &Shot{ScreenWidth: img.Rect.Dx(), ScreenHeight: img.Rect.Dy()}
	shot.Scale = fitScale(shot.ScreenWidth, shot.ScreenHeight, d.cfg.MaxWidth, d.cfg.MaxHeight)
	if shot.Scale < 1 {
		img = downscale(img, shot.Scale)
	}
	shot.Width, shot.Height = img.Rect.Dx(), img.Rect.Dy()
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if err := pngEncoder.Encode(buf, img); err != nil {
		return nil, fmt.Errorf("encode screenshot: %w", err)
	}
	shot.PNG = bytes.Clone(buf.Bytes())
	return shot, nil
}

var (
	bufPool    = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: new(pngPool)}
)

type pngPool struct{ p sync.Pool }

func (p *pngPool) Get() *png.EncoderBuffer {
	b, _ := p.p.Get().(*png.EncoderBuffer)
	return b
}
func (p *pngPool) Put(b *png.EncoderBuffer) { p.p.Put(b) }

func (d *Desktop) xwdCapture(ctx context.Context) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "xwd", "-root", "-silent", "-display", d.Display())
	cmd.Env = d.env()
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("xwd: %w", err)
	}
	return out, nil
}

// fitScale is the largest factor <= 1 that fits w x h into maxW x maxH.
func fitScale(w, h, maxW, maxH int) float64 {
	s := math.Min(float64(maxW)/float64(w), float64(maxH)/float64(h))
	return math.Min(s, 1)
}

// toScreen maps a screenshot coordinate back to the screen.
func toScreen(v int, scale float64, limit int) int {
	s := int(math.Round(float64(v) / scale))
	return max(0, min(s, limit-1))
}

// toModel maps a screen coordinate to screenshot space.
func toModel(v int, scale float64) int { return int(math.Round(float64(v) * scale)) }

// decodeXWD decodes a ZPixmap XWD image with 24 or 32 bits per pixel and
// true-colour masks, which is what Xvfb and xwd produce for a depth-24
// screen. The header is big-endian; pixels follow the header's byte order.
func decodeXWD(b []byte) (*image.RGBA, error) {
	const headerLen = 100
	if len(b) < headerLen {
		return nil, errors.New("xwd: short header")
	}
	h := func(i int) uint32 { return binary.BigEndian.Uint32(b[i*4:]) }
	var (
		headerSize   = int(h(0))
		format       = h(2)
		width        = int(h(4))
		height       = int(h(5))
		byteOrder    = h(7)
		bitsPerPixel = int(h(11))
		bytesPerLine = int(h(12))
		redMask      = h(14)
		greenMask    = h(15)
		blueMask     = h(16)
		ncolors      = int(h(19))
	)
	if format != 2 {
		return nil, fmt.Errorf("xwd: pixmap format %d, want ZPixmap", format)
	}
	if bitsPerPixel != 32 && bitsPerPixel != 24 {
		return nil, fmt.Errorf("xwd: %d bits per pixel unsupported", bitsPerPixel)
	}
	if width <= 0 || height <= 0 || width > 1<<14 || height > 1<<14 {
		return nil, fmt.Errorf("xwd: bad size %dx%d", width, height)
	}
	off := headerSize + ncolors*12
	if off < headerLen || bytesPerLine < width*bitsPerPixel/8 || len(b) < off+bytesPerLine*height {
		return nil, errors.New("xwd: truncated image")
	}
	rs, gs, bs := shiftOf(redMask), shiftOf(greenMask), shiftOf(blueMask)
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	bpp := bitsPerPixel / 8
	fast := bpp == 4 && byteOrder == 0 && redMask == 0xff0000 && greenMask == 0xff00 && blueMask == 0xff
	for y := range height {
		src := b[off+y*bytesPerLine : off+y*bytesPerLine+width*bpp]
		dst := img.Pix[y*img.Stride : y*img.Stride+width*4]
		if fast {
			// LSBFirst 0x00RRGGBB: bytes B, G, R, X.
			for i := 0; i < len(src); i += 4 {
				dst[i], dst[i+1], dst[i+2], dst[i+3] = src[i+2], src[i+1], src[i], 0xff
			}
			continue
		}
		for x := range width {
			p := src[x*bpp : x*bpp+bpp]
			var v uint32
			if byteOrder == 0 {
				for i := bpp - 1; i >= 0; i-- {
					v = v<<8 | uint32(p[i])
				}
			} else {
				for i := range bpp {
					v = v<<8 | uint32(p[i])
				}
			}
			dst[x*4] = uint8((v & redMask) >> rs)
			dst[x*4+1] = uint8((v & greenMask) >> gs)
			dst[x*4+2] = uint8((v & blueMask) >> bs)
			dst[x*4+3] = 0xff
		}
	}
	return img, nil
}

func shiftOf(mask uint32) uint32 {
	if mask == 0 {
		return 0
	}
	var s uint32
	for mask&1 == 0 {
		mask >>= 1
		s++
	}
	return s
}

// downscale shrinks src by scale (< 1) with a box filter: each output pixel
// averages the source pixels it covers, which keeps text legible better than
// sampling.
func downscale(src *image.RGBA, scale float64) *image.RGBA {
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	dw := max(1, int(math.Round(float64(sw)*scale)))
	dh := max(1, int(math.Round(float64(sh)*scale)))
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for y := range dh {
		y0, y1 := y*sh/dh, max((y+1)*sh/dh, y*sh/dh+1)
		for x := range dw {
			x0, x1 := x*sw/dw, max((x+1)*sw/dw, x*sw/dw+1)
			var r, g, b, n uint32
			for sy := y0; sy < y1; sy++ {
				row := src.Pix[sy*src.Stride:]
				for sx := x0; sx < x1; sx++ {
					r += uint32(row[sx*4])
					g += uint32(row[sx*4+1])
					b += uint32(row[sx*4+2])
					n++
				}
			}
			i := y*dst.Stride + x*4
			dst.Pix[i], dst.Pix[i+1], dst.Pix[i+2], dst.Pix[i+3] = uint8(r/n), uint8(g/n), uint8(b/n), 0xff
		}
	}
	return dst
}
