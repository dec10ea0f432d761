package kernel

import (
	"encoding/base64"
	"regexp"
	"strings"
	"time"
)

// Languages Execute accepts.
const (
	Python     = "python"
	JavaScript = "javascript"
	TypeScript = "typescript"
)

// Result is what one execution produced.
type Result struct {
	Language string `json:"language"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	// Outputs are Python's rich results and displays, in order.
	Outputs []Output `json:"outputs,omitempty"`
	// Error is set when the code raised (Python) or, for node, when it
	// exited non-zero with a recognizable error.
	Error *ExecError `json:"error,omitempty"`
	// ExitCode is node's exit status; for Python 0 on success, 1 on error.
	ExitCode       int `json:"exit_code"`
	ExecutionCount int `json:"execution_count,omitempty"`
	// TimedOut says the code ran past its timeout and was interrupted;
	// Restarted that the kernel had to be restarted, losing its state.
	TimedOut  bool `json:"timed_out,omitempty"`
	Restarted bool `json:"restarted,omitempty"`
	// Truncated says output beyond the limit was dropped.
	Truncated bool          `json:"truncated,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
}

// Output is one rich output: an expression's value or a display.
type Output struct {
	Kind   string  `json:"kind"` // "result" or "display"
	Text   string  `json:"text,omitempty"`
	HTML   string  `json:"html,omitempty"`
	Images []Image `json:"images,omitempty"`
}

// Image is an image output; Data is the decoded file (JSON carries it as
// base64).
type Image struct {
	MIME string `json:"mime"`
	Data []byte `json:"data"`
}

// ExecError is an error raised by the executed code.
type ExecError struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback,omitempty"`
}

// collector accumulates output under limits.
type collector struct {
	res       *Result
	limit     int
	maxImages int
	images    int
}

func (c *collector) stream(name, text string) {
	dst := &c.res.Stdout
	if name == "stderr" {
		dst = &c.res.Stderr
	}
	if room := c.limit - len(*dst); len(text) > room {
		text = text[:max(room, 0)]
		c.res.Truncated = true
	}
	*dst += text
}

func (c *collector) output(kind string, data map[string]any) {
	o := Output{Kind: kind}
	if s, ok := data["text/plain"].(string); ok {
		o.Text = StripANSI(s)
	}
	if s, ok := data["text/html"].(string); ok && len(s) <= c.limit {
		o.HTML = s
	}
	for _, mime := range []string{"image/png", "image/jpeg"} {
		s, ok := data[mime].(string)
		if !ok {
			continue
		}
		if c.images >= c.maxImages {
			c.res.Truncated = true
			continue
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
		if err != nil {
			continue
		}
		c.images++
		o.Images = append(o.Images, Image{MIME: mime, Data: b})
	}
	if s, ok := data["image/svg+xml"].(string); ok && c.images < c.maxImages {
		c.images++
		o.Images = append(o.Images, Image{MIME: "image/svg+xml", Data: []byte(s)})
	}
	c.res.Outputs = append(c.res.Outputs, o)
}

func (c *collector) clear() {
	c.res.Stdout, c.res.Stderr, c.res.Outputs = "", "", nil
}

func (c *collector) fail(name, value string, traceback []string) {
	c.res.Error = &ExecError{
		Name:      name,
		Value:     StripANSI(value),
		Traceback: StripANSI(strings.Join(traceback, "\n")),
	}
}

var ansi = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// StripANSI removes terminal escape sequences (colours, cursor moves),
// which IPython puts in tracebacks and which mean nothing to a model.
func StripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansi.ReplaceAllString(s, "")
}
