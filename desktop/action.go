package desktop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
)

// Action names, as in the computer tool the agent offers.
const (
	ActionScreenshot     = "screenshot"
	ActionMouseMove      = "mouse_move"
	ActionLeftClick      = "left_click"
	ActionRightClick     = "right_click"
	ActionMiddleClick    = "middle_click"
	ActionDoubleClick    = "double_click"
	ActionTripleClick    = "triple_click"
	ActionLeftClickDrag  = "left_click_drag"
	ActionLeftMouseDown  = "left_mouse_down"
	ActionLeftMouseUp    = "left_mouse_up"
	ActionType           = "type"
	ActionKey            = "key"
	ActionHoldKey        = "hold_key"
	ActionScroll         = "scroll"
	ActionWait           = "wait"
	ActionCursorPosition = "cursor_position"
)

// Point is a coordinate; in JSON it is an [x, y] array.
type Point struct{ X, Y int }

func (p Point) MarshalJSON() ([]byte, error) { return json.Marshal([2]int{p.X, p.Y}) }

func (p *Point) UnmarshalJSON(b []byte) error {
	var a [2]int
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("coordinate must be [x, y]: %w", err)
	}
	p.X, p.Y = a[0], a[1]
	return nil
}

// Action is one computer-tool call. Coordinates are in screenshot space
// (what the model saw); the desktop maps them to the screen with Scale.
type Action struct {
	Action          string  `json:"action"`
	Coordinate      *Point  `json:"coordinate,omitempty"`
	StartCoordinate *Point  `json:"start_coordinate,omitempty"`
	Text            string  `json:"text,omitempty"`
	ScrollDirection string  `json:"scroll_direction,omitempty"`
	ScrollAmount    int     `json:"scroll_amount,omitempty"`
	Duration        float64 `json:"duration,omitempty"` // seconds
}

// Result is what an action returns.
type Result struct {
	// Cursor is the pointer position in screenshot space (cursor_position).
	Cursor *Point `json:"cursor,omitempty"`
	// PNG is the screen (screenshot), scaled by Scale.
	PNG   []byte  `json:"png,omitempty"`
	Scale float64 `json:"scale,omitempty"`
}

// Typing is sent in chunks so that a long text cannot stall one xdotool run
// for minutes and the context is checked between chunks.
const (
	typeChunk   = 50
	typeDelayMS = 12
	maxWait     = 60 * time.Second
	maxScroll   = 100
)

// DisplayWait bounds how long an action waits for a display that is
// still starting. A desktop job's first tool call can come before Xvfb is
// up (files and shell are ready first); waiting a little beats an error
// the agent spends a step on.
const DisplayWait = 20 * time.Second

// waitDisplay returns once the display is up, or EUNAVAILABLE after
// DisplayWait (or ctx's end).
func (d *Desktop) waitDisplay(ctx context.Context) error {
	if d.disp.ready.Load() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, DisplayWait)
	defer cancel()
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for !d.disp.ready.Load() {
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return drydock.Errorf(drydock.EUNAVAILABLE, "the display is not ready after %s (restarts: %v)", DisplayWait, d.Restarts())
		case <-t.C:
		}
	}
	return nil
}

// Do performs one action on the display, waiting up to DisplayWait for a
// display that is still starting.
func (d *Desktop) Do(ctx context.Context, a Action) (*Result, error) {
	if a.Action == ActionWait {
		return &Result{}, sleep(ctx, a.Duration)
	}
	if err := d.waitDisplay(ctx); err != nil {
		return nil, err
	}
	if a.Action == ActionScreenshot {
		png, scale, err := d.Screenshot(ctx)
		if err != nil {
			return nil, err
		}
		return &Result{PNG: png, Scale: scale}, nil
	}
	if a.Action == ActionCursorPosition {
		return d.cursor(ctx)
	}
	args, err := d.xdotoolArgs(a)
	if err != nil {
		return nil, err
	}
	if a.Action == ActionType {
		return &Result{}, d.typeText(ctx, a.Text)
	}
	if a.Action == ActionHoldKey {
		if err := d.xdotool(ctx, args[0]...); err != nil {
			return nil, err
		}
		werr := sleep(ctx, a.Duration)
		// Released even when the wait was cut short, or the key stays down.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := d.xdotool(rctx, args[1]...); err != nil {
			return nil, err
		}
		return &Result{}, werr
	}
	return &Result{}, d.xdotool(ctx, args[0]...)
}

// xdotoolArgs validates a and builds its xdotool command lines.
func (d *Desktop) xdotoolArgs(a Action) ([][]string, error) {
	var move []string
	if a.Coordinate != nil {
		x, y, err := d.screenPoint(*a.Coordinate)
		if err != nil {
			return nil, err
		}
		move = []string{"mousemove", strconv.Itoa(x), strconv.Itoa(y)}
	}
	// Modifier keys held during a click, e.g. "shift" or "ctrl+alt".
	var down, up []string
	if a.Text != "" && isClick(a.Action) {
		for _, k := range strings.Split(a.Text, "+") {
			k = keyName(k)
			down = append(down, "keydown", k)
			up = append([]string{"keyup", k}, up...)
		}
	}
	click := func(button string, repeat int) [][]string {
		args := append([]string{}, move...)
		args = append(args, down...)
		args = append(args, "click", "--repeat", strconv.Itoa(repeat), button)
		return [][]string{append(args, up...)}
	}
	switch a.Action {
	case ActionMouseMove:
		if move == nil {
			return nil, drydock.Errorf(drydock.EINVALID, "mouse_move needs a coordinate")
		}
		return [][]string{move}, nil
	case ActionLeftClick:
		return click("1", 1), nil
	case ActionRightClick:
		return click("3", 1), nil
	case ActionMiddleClick:
		return click("2", 1), nil
	case ActionDoubleClick:
		return click("1", 2), nil
	case ActionTripleClick:
		return click("1", 3), nil
	case ActionLeftMouseDown:
		return [][]string{append(move, "mousedown", "1")}, nil
	case ActionLeftMouseUp:
		return [][]string{append(move, "mouseup", "1")}, nil
	case ActionLeftClickDrag:
		if move == nil {
			return nil, drydock.Errorf(drydock.EINVALID, "left_click_drag needs a coordinate to drag to")
		}
		var args []string
		if a.StartCoordinate != nil {
			x, y, err := d.screenPoint(*a.StartCoordinate)
			if err != nil {
				return nil, err
			}
			args = []string{"mousemove", strconv.Itoa(x), strconv.Itoa(y)}
		}
		// The pauses let applications see a press, a motion and a release
		// as separate events, as a hand would produce them.
		args = append(args, "mousedown", "1", "sleep", "0.05")
		args = append(args, move...)
		args = append(args, "sleep", "0.05", "mouseup", "1")
		return [][]string{args}, nil
	case ActionType:
		if a.Text == "" {
			return nil, drydock.Errorf(drydock.EINVALID, "type needs text")
		}
		return nil, nil
	case ActionKey, ActionHoldKey:
		keys := strings.Fields(a.Text)
		if len(keys) == 0 {
			return nil, drydock.Errorf(drydock.EINVALID, "%s needs text naming the key(s)", a.Action)
		}
		for i, k := range keys {
			keys[i] = keyCombo(k)
		}
		if a.Action == ActionKey {
			return [][]string{append([]string{"key", "--"}, keys...)}, nil
		}
		return [][]string{append([]string{"keydown", "--"}, keys...), append([]string{"keyup", "--"}, keys...)}, nil
	case ActionScroll:
		button, ok := map[string]string{"up": "4", "down": "5", "left": "6", "right": "7"}[a.ScrollDirection]
		if !ok {
			return nil, drydock.Errorf(drydock.EINVALID, "scroll_direction must be up, down, left or right")
		}
		n := a.ScrollAmount
		if n <= 0 {
			n = 3
		}
		if n > maxScroll {
			return nil, drydock.Errorf(drydock.EINVALID, "scroll_amount over %d", maxScroll)
		}
		args := append([]string{}, move...)
		args = append(args, down...)
		args = append(args, "click", "--repeat", strconv.Itoa(n), "--delay", "10", button)
		return [][]string{append(args, up...)}, nil
	}
	return nil, drydock.Errorf(drydock.EINVALID, "unknown action %q", a.Action)
}

func isClick(action string) bool {
	switch action {
	case ActionLeftClick, ActionRightClick, ActionMiddleClick, ActionDoubleClick, ActionTripleClick, ActionScroll:
		return true
	}
	return false
}

// screenPoint maps a screenshot-space point to the screen, rejecting points
// outside the screenshot.
func (d *Desktop) screenPoint(p Point) (x, y int, err error) {
	scale := d.Scale()
	mw, mh := toModel(d.cfg.Width, scale), toModel(d.cfg.Height, scale)
	if p.X < 0 || p.Y < 0 || p.X >= mw || p.Y >= mh {
		return 0, 0, drydock.Errorf(drydock.EINVALID, "coordinate [%d, %d] is outside the %dx%d screen", p.X, p.Y, mw, mh)
	}
	return toScreen(p.X, scale, d.cfg.Width), toScreen(p.Y, scale, d.cfg.Height), nil
}

func (d *Desktop) typeText(ctx context.Context, text string) error {
	for len(text) > 0 {
		n := 0
		for i := 0; i < typeChunk && n < len(text); i++ {
			_, size := utf8.DecodeRuneInString(text[n:])
			n += size
		}
		if err := d.xdotool(ctx, "type", "--delay", strconv.Itoa(typeDelayMS), "--", text[:n]); err != nil {
			return err
		}
		text = text[n:]
	}
	return nil
}

func (d *Desktop) cursor(ctx context.Context) (*Result, error) {
	out, err := d.xdotoolOutput(ctx, "getmouselocation", "--shell")
	if err != nil {
		return nil, err
	}
	var x, y = -1, -1
	for line := range strings.Lines(out) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		switch k {
		case "X":
			x = n
		case "Y":
			y = n
		}
	}
	if x < 0 || y < 0 {
		return nil, fmt.Errorf("parse xdotool getmouselocation output %q", out)
	}
	scale := d.Scale()
	return &Result{Cursor: &Point{toModel(x, scale), toModel(y, scale)}, Scale: scale}, nil
}

func (d *Desktop) xdotool(ctx context.Context, args ...string) error {
	_, err := d.xdotoolOutput(ctx, args...)
	return err
}

func (d *Desktop) xdotoolOutput(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "xdotool", args...)
	cmd.Env = d.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("xdotool %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	// xdotool exits 0 on unknown key names and only complains on stderr.
	if s := stderr.String(); strings.Contains(s, "Invalid key") || strings.Contains(s, "(symbol) for key") {
		return "", drydock.Errorf(drydock.EINVALID, "xdotool: %s", strings.TrimSpace(s))
	}
	return stdout.String(), nil
}

// keyAliases maps names models commonly use to X keysym names.
var keyAliases = map[string]string{
	"enter": "Return", "return": "Return", "esc": "Escape", "escape": "Escape",
	"backspace": "BackSpace", "del": "Delete", "delete": "Delete", "tab": "Tab",
	"space": "space", "pageup": "Page_Up", "pagedown": "Page_Down",
	"page_up": "Page_Up", "page_down": "Page_Down", "home": "Home", "end": "End",
	"up": "Up", "down": "Down", "left": "Left", "right": "Right",
	"arrowup": "Up", "arrowdown": "Down", "arrowleft": "Left", "arrowright": "Right",
	"insert": "Insert", "control": "ctrl", "ctrl": "ctrl", "alt": "alt", "shift": "shift",
	"cmd": "super", "command": "super", "meta": "super", "win": "super", "super": "super",
}

func keyName(k string) string {
	if v, ok := keyAliases[strings.ToLower(k)]; ok {
		return v
	}
	return k
}

// keyCombo normalizes "Ctrl+Shift+T" to "ctrl+shift+T".
func keyCombo(k string) string {
	parts := strings.Split(k, "+")
	for i, p := range parts {
		parts[i] = keyName(p)
	}
	return strings.Join(parts, "+")
}

func sleep(ctx context.Context, seconds float64) error {
	dur := time.Duration(seconds * float64(time.Second))
	if dur < 0 || dur > maxWait {
		return drydock.Errorf(drydock.EINVALID, "duration must be between 0 and %v", maxWait)
	}
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
