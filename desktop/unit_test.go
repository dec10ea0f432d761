package desktop

import (
	"encoding/binary"
	"encoding/json"
	"image"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/google/go-cmp/cmp"
)

// xwdImage builds an XWD file as Xvfb writes it on a little-endian machine:
// big-endian header, a window name, a colour map, then B,G,R,X pixels.
func xwdImage(w, h int, pixel func(x, y int) (r, g, b uint8)) []byte {
	name := []byte("Xvfb main window\x00")
	const ncolors = 3
	header := make([]byte, 100)
	put := func(i int, v uint32) { binary.BigEndian.PutUint32(header[i*4:], v) }
	put(0, uint32(100+len(name)))
	put(1, 7)
	put(2, 2) // ZPixmap
	put(3, 24)
	put(4, uint32(w))
	put(5, uint32(h))
	put(7, 0) // LSBFirst
	put(11, 32)
	put(12, uint32(w*4+8)) // rows padded
	put(14, 0xff0000)
	put(15, 0xff00)
	put(16, 0xff)
	put(19, ncolors)
	out := append(header, name...)
	out = append(out, make([]byte, ncolors*12)...)
	for y := range h {
		for x := range w {
			r, g, b := pixel(x, y)
			out = append(out, b, g, r, 0)
		}
		out = append(out, make([]byte, 8)...)
	}
	return out
}

func TestDecodeXWD(t *testing.T) {
	t.Parallel()
	pixel := func(x, y int) (uint8, uint8, uint8) { return uint8(x), uint8(y), uint8(x + y) }
	img, err := decodeXWD(xwdImage(5, 3, pixel))
	if err != nil {
		t.Fatal(err)
	}
	if img.Rect != image.Rect(0, 0, 5, 3) {
		t.Fatalf("bounds %v", img.Rect)
	}
	for y := range 3 {
		for x := range 5 {
			r, g, b := pixel(x, y)
			i := img.PixOffset(x, y)
			if got, want := img.Pix[i:i+4], []byte{r, g, b, 0xff}; !cmp.Equal(got, want) {
				t.Fatalf("pixel (%d,%d) = %v, want %v", x, y, got, want)
			}
		}
	}

	full := xwdImage(5, 3, pixel)
	for name, b := range map[string][]byte{
		"short header": full[:50],
		"truncated":    full[:len(full)-10],
	} {
		if _, err := decodeXWD(b); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func TestDownscaleAverages(t *testing.T) {
	t.Parallel()
	// A 4x2 checkerboard of black and white halves to a 2x1 grey image.
	src := image.NewRGBA(image.Rect(0, 0, 4, 2))
	for y := range 2 {
		for x := range 4 {
			v := uint8(0)
			if (x+y)%2 == 0 {
				v = 200
			}
			i := src.PixOffset(x, y)
			copy(src.Pix[i:], []byte{v, v, v, 255})
		}
	}
	dst := downscale(src, 0.5)
	if dst.Rect != image.Rect(0, 0, 2, 1) {
		t.Fatalf("bounds %v", dst.Rect)
	}
	if got := dst.Pix[:8]; !cmp.Equal(got, []byte{100, 100, 100, 255, 100, 100, 100, 255}) {
		t.Errorf("pixels %v, want grey 100", got)
	}
}

func TestScaleAndCoordinates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		w, h  int
		scale float64
	}{
		{1280, 800, 1},
		{1024, 768, 1},
		{2560, 1600, 0.5},
		{1920, 1080, 2.0 / 3},
		{1280, 1600, 0.5},
	}
	for _, tt := range tests {
		if got := fitScale(tt.w, tt.h, 1280, 800); got != tt.scale {
			t.Errorf("fitScale(%d, %d) = %v, want %v", tt.w, tt.h, got, tt.scale)
		}
	}
	if got := toScreen(640, 2.0/3, 1920); got != 960 {
		t.Errorf("toScreen(640) = %d, want 960", got)
	}
	if got := toScreen(1279, 2.0/3, 1920); got != 1919 {
		t.Errorf("toScreen(1279) = %d, want 1919 (clamped)", got)
	}
	if got := toModel(960, 2.0/3); got != 640 {
		t.Errorf("toModel(960) = %d, want 640", got)
	}
}

func TestXdotoolArgs(t *testing.T) {
	t.Parallel()
	d := New(Config{Width: 1920, Height: 1080}, nil)
	pt := func(x, y int) *Point { return &Point{x, y} }
	tests := []struct {
		name string
		a    Action
		want [][]string
		code string
	}{
		{"move", Action{Action: "mouse_move", Coordinate: pt(640, 360)}, [][]string{{"mousemove", "960", "540"}}, ""},
		{"click here", Action{Action: "left_click"}, [][]string{{"click", "--repeat", "1", "1"}}, ""},
		{"triple", Action{Action: "triple_click", Coordinate: pt(0, 0)},
			[][]string{{"mousemove", "0", "0", "click", "--repeat", "3", "1"}}, ""},
		{"shift click", Action{Action: "left_click", Coordinate: pt(10, 10), Text: "shift"},
			[][]string{{"mousemove", "15", "15", "keydown", "shift", "click", "--repeat", "1", "1", "keyup", "shift"}}, ""},
		{"key aliases", Action{Action: "key", Text: "Ctrl+S Enter"}, [][]string{{"key", "--", "ctrl+S", "Return"}}, ""},
		{"hold", Action{Action: "hold_key", Text: "shift", Duration: 1},
			[][]string{{"keydown", "--", "shift"}, {"keyup", "--", "shift"}}, ""},
		{"scroll", Action{Action: "scroll", Coordinate: pt(2, 2), ScrollDirection: "left", ScrollAmount: 4},
			[][]string{{"mousemove", "3", "3", "click", "--repeat", "4", "--delay", "10", "6"}}, ""},
		{"drag", Action{Action: "left_click_drag", StartCoordinate: pt(2, 2), Coordinate: pt(4, 4)},
			[][]string{{"mousemove", "3", "3", "mousedown", "1", "sleep", "0.05", "mousemove", "6", "6", "sleep", "0.05", "mouseup", "1"}}, ""},
		{"outside", Action{Action: "left_click", Coordinate: pt(1280, 5)}, nil, drydock.EINVALID},
		{"negative", Action{Action: "mouse_move", Coordinate: pt(-1, 5)}, nil, drydock.EINVALID},
		{"move nowhere", Action{Action: "mouse_move"}, nil, drydock.EINVALID},
		{"no key", Action{Action: "key"}, nil, drydock.EINVALID},
		{"bad scroll", Action{Action: "scroll", ScrollDirection: "sideways"}, nil, drydock.EINVALID},
		{"unknown", Action{Action: "teleport"}, nil, drydock.EINVALID},
	}
	for _, tt := range tests {
		got, err := d.xdotoolArgs(tt.a)
		if code := drydock.ErrorCode(err); code != tt.code {
			t.Errorf("%s: error %v, want code %q", tt.name, err, tt.code)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: args (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestActionJSON(t *testing.T) {
	t.Parallel()
	var a Action
	if err := json.Unmarshal([]byte(`{"action":"left_click","coordinate":[12,34]}`), &a); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Action{Action: "left_click", Coordinate: &Point{12, 34}}, a); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	b, err := json.Marshal(Result{Cursor: &Point{5, 6}, Scale: 1})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"cursor":[5,6],"scale":1}` {
		t.Errorf("result JSON %s", b)
	}
	if err := json.Unmarshal([]byte(`{"coordinate":"12,34"}`), &a); err == nil {
		t.Error("a string coordinate was accepted")
	}
}

func TestWaitAndUnreadyDisplay(t *testing.T) {
	t.Parallel()
	d := New(Config{}, nil)
	if _, err := d.Do(t.Context(), Action{Action: "wait", Duration: 0.01}); err != nil {
		t.Errorf("wait: %v", err)
	}
	if _, err := d.Do(t.Context(), Action{Action: "wait", Duration: 1000}); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Errorf("a 1000 s wait: %v, want invalid", err)
	}
	if _, err := d.Do(t.Context(), Action{Action: "left_click"}); drydock.ErrorCode(err) != drydock.EUNAVAILABLE {
		t.Errorf("click before start: %v, want unavailable", err)
	}
}
