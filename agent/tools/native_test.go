package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock/agent/tools"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/google/go-cmp/cmp"
)

// desktopBox records the desktop actions it is asked for and answers
// with a screenshot of a fixed size.
type desktopBox struct {
	inertBox
	w, h    int
	png     []byte // the screenshot, when a test looks at it
	mu      sync.Mutex
	actions []toolbox.DesktopAction
}

func (d *desktopBox) Screenshot(context.Context) (*toolbox.Screenshot, error) {
	shot := d.png
	if shot == nil {
		shot = []byte("png")
	}
	return &toolbox.Screenshot{PNG: shot, Width: d.w, Height: d.h, ScreenWidth: d.w, ScreenHeight: d.h, Scale: 1}, nil
}

func (d *desktopBox) DesktopAction(_ context.Context, a toolbox.DesktopAction) (*toolbox.DesktopResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.actions = append(d.actions, a)
	if a.Action == "cursor_position" {
		return &toolbox.DesktopResult{Cursor: []int{12, 34}}, nil
	}
	return &toolbox.DesktopResult{}, nil
}

func runCall(t *testing.T, set *tools.Set, name, input string) tools.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return set.Run(ctx, llm.ToolCall{ID: "toolu_1", Name: name, Input: json.RawMessage(input)})
}

// The tools declare the built-in tools they stand for, the computer with
// the size of the screenshots it returns.
func TestToolsDeclareTheirBuiltIns(t *testing.T) {
	t.Parallel()
	kinds := map[string]*llm.NativeTool{}
	for _, d := range tools.New(tools.Env{Desktop: true}).Defs() {
		kinds[d.Name] = d.Native
	}
	want := map[string]*llm.NativeTool{
		"bash":                        {Kind: llm.NativeBash},
		"str_replace_based_edit_tool": {Kind: llm.NativeTextEditor},
		"computer":                    {Kind: llm.NativeComputer, DisplayWidth: 1280, DisplayHeight: 800, Zoom: true},
		"execute_code":                nil, "recall": nil, "finish": nil,
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("built-ins (-want +got):\n%s", diff)
	}
	for _, d := range tools.New(tools.Env{Desktop: true, DisplayWidth: 1024, DisplayHeight: 768}).Defs() {
		if d.Name == "computer" && (d.Native.DisplayWidth != 1024 || d.Native.DisplayHeight != 768) {
			t.Errorf("computer declares %dx%d; want the configured 1024x768", d.Native.DisplayWidth, d.Native.DisplayHeight)
		}
	}
}

// Inputs as Claude's built-in computer tool (computer_20250124) produces
// them reach the desktop as the same actions.
func TestComputerTakesBuiltInInputs(t *testing.T) {
	t.Parallel()
	box := &desktopBox{w: 1280, h: 800}
	set := tools.New(tools.Env{Box: box, Desktop: true, SettleDelay: time.Millisecond})
	cases := []struct {
		input string
		want  toolbox.DesktopAction
	}{
		{`{"action":"left_click","coordinate":[640,400]}`, toolbox.DesktopAction{Action: "left_click", Coordinate: []int{640, 400}}},
		{`{"action":"left_click","coordinate":[640,400],"text":"shift"}`, toolbox.DesktopAction{Action: "left_click", Coordinate: []int{640, 400}, Text: "shift"}},
		{`{"action":"double_click","coordinate":[10,20]}`, toolbox.DesktopAction{Action: "double_click", Coordinate: []int{10, 20}}},
		{`{"action":"triple_click","coordinate":[10,20]}`, toolbox.DesktopAction{Action: "triple_click", Coordinate: []int{10, 20}}},
		{`{"action":"right_click","coordinate":[5,6]}`, toolbox.DesktopAction{Action: "right_click", Coordinate: []int{5, 6}}},
		{`{"action":"middle_click","coordinate":[5,6]}`, toolbox.DesktopAction{Action: "middle_click", Coordinate: []int{5, 6}}},
		{`{"action":"mouse_move","coordinate":[100,200]}`, toolbox.DesktopAction{Action: "mouse_move", Coordinate: []int{100, 200}}},
		{`{"action":"left_click_drag","start_coordinate":[10,10],"coordinate":[300,300]}`, toolbox.DesktopAction{Action: "left_click_drag", Coordinate: []int{300, 300}, StartCoordinate: []int{10, 10}}},
		{`{"action":"left_mouse_down"}`, toolbox.DesktopAction{Action: "left_mouse_down"}},
		{`{"action":"left_mouse_up"}`, toolbox.DesktopAction{Action: "left_mouse_up"}},
		{`{"action":"type","text":"hello world"}`, toolbox.DesktopAction{Action: "type", Text: "hello world"}},
		{`{"action":"key","text":"ctrl+s"}`, toolbox.DesktopAction{Action: "key", Text: "ctrl+s"}},
		{`{"action":"hold_key","text":"shift","duration":1.5}`, toolbox.DesktopAction{Action: "hold_key", Text: "shift", Duration: 1500 * 1e6}},
		{`{"action":"scroll","coordinate":[500,300],"scroll_direction":"down","scroll_amount":3}`, toolbox.DesktopAction{Action: "scroll", Coordinate: []int{500, 300}, ScrollDirection: "down", ScrollAmount: 3}},
		{`{"action":"scroll","coordinate":[500,300],"scroll_direction":"up","scroll_amount":5,"text":"ctrl"}`, toolbox.DesktopAction{Action: "scroll", Coordinate: []int{500, 300}, ScrollDirection: "up", ScrollAmount: 5, Text: "ctrl"}},
		{`{"action":"wait","duration":1}`, toolbox.DesktopAction{Action: "wait", Duration: 1e9}},
	}
	for _, c := range cases {
		r := runCall(t, set, "computer", c.input)
		if r.IsError || len(r.Images) != 1 || r.Images[0].Width != 1280 {
			t.Errorf("%s: %+v; want a screenshot of the effect", c.input, r)
		}
		box.mu.Lock()
		got := box.actions[len(box.actions)-1]
		box.mu.Unlock()
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s: action (-want +got):\n%s", c.input, diff)
		}
	}
	if r := runCall(t, set, "computer", `{"action":"screenshot"}`); r.IsError || len(r.Images) != 1 || r.Images[0].Height != 800 {
		t.Errorf("screenshot: %+v", r)
	}
	want(t, runCall(t, set, "computer", `{"action":"cursor_position"}`), false, "X=12,Y=34")
	want(t, runCall(t, set, "computer", `{"action":"hold_key","duration":1}`), true, "hold_key needs text")
	want(t, runCall(t, set, "computer", `{"action":"hold_key","text":"a","duration":600}`), true, "between 0 and 60")
}

// computer_20251124's zoom shows a region enlarged by a whole factor to fit
// the display, pixels kept sharp.
func TestComputerZoom(t *testing.T) {
	t.Parallel()
	screen := image.NewRGBA(image.Rect(0, 0, 1280, 800))
	red, blue, white := color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}, color.RGBA{255, 255, 255, 255}
	draw.Draw(screen, screen.Rect, image.NewUniform(white), image.Point{}, draw.Src)
	screen.Set(100, 100, red)
	screen.Set(163, 139, blue)
	var buf bytes.Buffer
	if err := png.Encode(&buf, screen); err != nil {
		t.Fatal(err)
	}
	set := tools.New(tools.Env{Box: &desktopBox{w: 1280, h: 800, png: buf.Bytes()}, Desktop: true})
	r := runCall(t, set, "computer", `{"action":"zoom","region":[100,100,164,140]}`)
	want(t, r, false, "enlarged 20x to 1280x800", "stay those of the full screenshot")
	if len(r.Images) != 1 {
		t.Fatalf("zoom returned %d images", len(r.Images))
	}
	img, err := png.Decode(bytes.NewReader(r.Images[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 1280 || img.Bounds().Dy() != 800 || r.Images[0].Width != 1280 {
		t.Errorf("zoomed image %v; want 1280x800", img.Bounds())
	}
	for _, p := range []struct {
		x, y int
		c    color.RGBA
	}{{0, 0, red}, {19, 19, red}, {20, 0, white}, {1279, 799, blue}, {1260, 780, blue}, {1259, 779, white}} {
		if got := color.RGBAModel.Convert(img.At(p.x, p.y)).(color.RGBA); got != p.c {
			t.Errorf("zoomed pixel (%d, %d) = %v; want %v", p.x, p.y, got, p.c)
		}
	}
	want(t, runCall(t, set, "computer", `{"action":"zoom","region":[1200,700,1300,800]}`), true, "outside the 1280x800 screen")
	want(t, runCall(t, set, "computer", `{"action":"zoom","region":[10,10,5,20]}`), true, "x0 < x1")
	want(t, runCall(t, set, "computer", `{"action":"zoom"}`), true, "zoom needs region")
}

// A screenshot of another size than the declared display says so, since
// the model's coordinates are in the screenshot's pixels.
func TestComputerSaysWhenTheScreenIsNotTheDeclaredSize(t *testing.T) {
	t.Parallel()
	set := tools.New(tools.Env{Box: &desktopBox{w: 1280, h: 720}, Desktop: true, SettleDelay: time.Millisecond})
	want(t, runCall(t, set, "computer", `{"action":"screenshot"}`), false, "(1280x720)", "not the declared 1280x800")
	set = tools.New(tools.Env{Box: &desktopBox{w: 1280, h: 800}, Desktop: true})
	if r := runCall(t, set, "computer", `{"action":"screenshot"}`); r.IsError || strings.Contains(r.Output, "declared") {
		t.Errorf("a screenshot of the declared size: %q", r.Output)
	}
}

// Inputs as Claude's built-in text editor (text_editor_20250728) and bash
// (bash_20250124) produce them.
func TestEditorAndBashTakeBuiltInInputs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ed := "str_replace_based_edit_tool"
	want(t, b.call(t, ed, `{"command":"create","path":"notes.txt","file_text":"one\ntwo\nthree\n"}`), false, "File created successfully")
	// The 20250728 editor's insert sends insert_text, not new_str.
	want(t, b.call(t, ed, `{"command":"insert","path":"notes.txt","insert_line":1,"insert_text":"one and a half\n"}`), false, "     2\tone and a half")
	if got := b.read(t, "notes.txt"); got != "one\none and a half\ntwo\nthree\n" {
		t.Errorf("after insert_text: %q", got)
	}
	want(t, b.call(t, ed, `{"command":"insert","path":"notes.txt","insert_line":1}`), true, "insert_text")
	want(t, b.call(t, ed, `{"command":"view","path":"notes.txt","view_range":[2,3]}`), false, "     2\tone and a half\n     3\ttwo")
	want(t, b.call(t, ed, `{"command":"str_replace","path":"notes.txt","old_str":"three","new_str":"3"}`), false, "has been edited")
	want(t, b.call(t, "bash", `{"command":"cd /tmp && export X=1"}`), false)
	want(t, b.call(t, "bash", `{"restart":true}`), false, "restarted")
	// A fresh shell: back in the workspace, without the variable.
	r := b.call(t, "bash", `{"command":"pwd; echo x=$X"}`)
	want(t, r, false, b.env.Workspace+"\nx=")
	if !strings.HasSuffix(r.Output, "x=") {
		t.Errorf("after restart: %q; want X unset", r.Output)
	}
}
