package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/toolbox"
)

// computerDef is the computer tool for a display of w x h screenshot
// pixels. Claude models get their built-in computer tool instead, with the
// same size declared: the screenshots they see must be that size, and
// their coordinates are in that space.
func computerDef(w, h int) llm.Tool {
	return llm.Tool{
		Name:   NameComputer,
		Native: &llm.NativeTool{Kind: llm.NativeComputer, DisplayWidth: w, DisplayHeight: h, Zoom: true},
		Description: fmt.Sprintf(`Use the sandbox's graphical desktop with the mouse and keyboard, and see it.
* screenshot shows the screen. Coordinates are pixels of the screenshot ([x, y] from the top left); the screen is scaled to %dx%d.
* After every action except cursor_position a new screenshot shows its effect.
* Click the centre of what you aim at; if a click misses, take a screenshot and adjust.
* type enters text; key presses a key or combination in xdotool syntax (Return, ctrl+s, alt+Tab, ctrl+shift+t); hold_key holds the key(s) in text for duration seconds.
* scroll needs scroll_direction (up, down, left, right) and scroll_amount (clicks), at coordinate if given.
* left_click_drag drags from start_coordinate (or the cursor) to coordinate; left_mouse_down and left_mouse_up press and release the left button (at coordinate if given) for finer drags; wait pauses for duration seconds.
* zoom shows region [x0, y0, x1, y1] of the screen enlarged, to read small text; coordinates stay those of the full screenshot.
Prefer bash and the editor for work that needs no graphical interface.`, w, h),
		InputSchema: schema(`{"type":"object","properties":{
"action":{"type":"string","enum":["screenshot","left_click","right_click","middle_click","double_click","triple_click","mouse_move","left_click_drag","left_mouse_down","left_mouse_up","type","key","hold_key","scroll","wait","cursor_position","zoom"],"description":"The action to perform."},
"coordinate":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2,"description":"[x, y] in screenshot pixels: where to click, move, scroll, or end a drag."},
"start_coordinate":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2,"description":"left_click_drag: [x, y] where the drag starts."},
"text":{"type":"string","description":"type: the text; key and hold_key: the key or combination; clicks and scroll: modifier keys to hold (e.g. shift)."},
"scroll_direction":{"type":"string","enum":["up","down","left","right"]},
"scroll_amount":{"type":"integer","description":"scroll: how many wheel clicks."},
"duration":{"type":"number","description":"wait and hold_key: seconds (at most 60)."},
"region":{"type":"array","items":{"type":"integer"},"minItems":4,"maxItems":4,"description":"zoom: [x0, y0, x1, y1], the top left and bottom right corners in screenshot pixels."}},
"required":["action"]}`),
	}
}

// DefaultDisplay is the size screenshots are scaled to fit (toolboxd's
// bound, toolbox.Screenshot), and so the display the computer tool
// declares unless Env says otherwise.
const (
	DefaultDisplayWidth  = 1280
	DefaultDisplayHeight = 800
)

// computerActions are the actions of Anthropic's built-in computer tool
// (computer_20250124, and zoom from computer_20251124).
var computerActions = map[string]bool{
	"screenshot": true, "left_click": true, "right_click": true, "middle_click": true, "double_click": true,
	"triple_click": true, "mouse_move": true, "left_click_drag": true, "left_mouse_down": true, "left_mouse_up": true,
	"type": true, "key": true, "hold_key": true, "scroll": true, "wait": true, "cursor_position": true, "zoom": true,
}

type computer struct{ env *Env }

type computerInput struct {
	Action          string  `json:"action"`
	Coordinate      []int   `json:"coordinate"`
	StartCoordinate []int   `json:"start_coordinate"`
	Text            string  `json:"text"`
	ScrollDirection string  `json:"scroll_direction"`
	ScrollAmount    int     `json:"scroll_amount"`
	Duration        float64 `json:"duration"`
	Region          []int   `json:"region"` // zoom
}

func (c *computer) run(ctx context.Context, input json.RawMessage) Result {
	var in computerInput
	if err := decode(input, &in); err != nil {
		return errorf("computer: %v", err)
	}
	if !computerActions[in.Action] {
		return errorf("computer: unknown action %q", in.Action)
	}
	if msg := validateAction(in); msg != "" {
		return errorf("computer: %s", msg)
	}
	switch in.Action {
	case "screenshot":
		return c.screenshot(ctx, "")
	case "zoom":
		return c.zoom(ctx, in.Region)
	}
	res, err := c.env.Box.DesktopAction(ctx, toolbox.DesktopAction{
		Action:          in.Action,
		Coordinate:      in.Coordinate,
		StartCoordinate: in.StartCoordinate,
		Text:            in.Text,
		ScrollDirection: in.ScrollDirection,
		ScrollAmount:    in.ScrollAmount,
		Duration:        drydock.Duration(in.Duration * float64(time.Second)),
	})
	if err != nil {
		return desktopFailure(in.Action, err)
	}
	if in.Action == "cursor_position" {
		if len(res.Cursor) != 2 {
			return errorf("computer: the desktop did not report the cursor")
		}
		return Result{Output: fmt.Sprintf("X=%d,Y=%d", res.Cursor[0], res.Cursor[1])}
	}
	if in.Action != "wait" {
		// Give the screen a moment to show the action's effect.
		select {
		case <-time.After(c.env.SettleDelay):
		case <-ctx.Done():
			return errorf("cancelled")
		}
	}
	return c.screenshot(ctx, fmt.Sprintf("Performed %s.", in.Action))
}

func (c *computer) screenshot(ctx context.Context, prefix string) Result {
	shot, err := c.env.Box.Screenshot(ctx)
	if err != nil {
		r := desktopFailure("screenshot", err)
		if prefix != "" {
			r.Output = prefix + " " + r.Output
		}
		return r
	}
	text := fmt.Sprintf("Screenshot of the screen (%dx%d).", shot.Width, shot.Height)
	if w, h := c.env.DisplayWidth, c.env.DisplayHeight; shot.Width != w || shot.Height != h {
		// The model was told another size; say which one holds, so that
		// it aims in the screenshot's pixels.
		text += fmt.Sprintf(" Note: it is not the declared %dx%d display; coordinates are pixels of this screenshot.", w, h)
		c.env.Log.Warn("screenshot size differs from the computer tool's display", "width", shot.Width, "height", shot.Height, "display_width", w, "display_height", h)
	}
	if prefix != "" {
		text = prefix + " " + text
	}
	return Result{Output: text, Images: []Image{{Image: llm.Image{MediaType: "image/png", Data: shot.PNG}, Width: shot.Width, Height: shot.Height}}}
}

func desktopFailure(action string, err error) Result {
	if drydock.ErrorCode(err) == drydock.ENOTIMPLEMENTED {
		return errorf("computer: this sandbox has no desktop (%s).", drydock.ErrorMessage(err))
	}
	return failure("computer: "+action, err)
}

func validateAction(in computerInput) string {
	needsCoord := map[string]bool{"mouse_move": true, "left_click_drag": true}
	if needsCoord[in.Action] && len(in.Coordinate) != 2 {
		return in.Action + " needs coordinate [x, y]"
	}
	if len(in.Coordinate) != 0 && len(in.Coordinate) != 2 {
		return "coordinate must be [x, y]"
	}
	if len(in.StartCoordinate) != 0 && len(in.StartCoordinate) != 2 {
		return "start_coordinate must be [x, y]"
	}
	for _, v := range append(append([]int{}, in.Coordinate...), in.StartCoordinate...) {
		if v < 0 {
			return "coordinates must not be negative"
		}
	}
	switch in.Action {
	case "type", "key":
		if in.Text == "" {
			return in.Action + " needs text"
		}
	case "hold_key":
		if strings.TrimSpace(in.Text) == "" {
			return "hold_key needs text naming the key(s)"
		}
		if in.Duration < 0 || in.Duration > 60 {
			return "hold_key duration must be between 0 and 60 seconds"
		}
	case "scroll":
		switch strings.ToLower(in.ScrollDirection) {
		case "up", "down", "left", "right":
		default:
			return "scroll needs scroll_direction: up, down, left or right"
		}
		if in.ScrollAmount < 0 {
			return "scroll_amount must not be negative"
		}
	case "wait":
		if in.Duration < 0 || in.Duration > 60 {
			return "wait duration must be between 0 and 60 seconds"
		}
	}
	return ""
}
