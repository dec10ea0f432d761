package kernel

import (
	"encoding/base64"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
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
	// Outputs is everything the code produced, in order: printed text
	// (adjacent pieces of one stream merged), and Python's rich results and
	// displays.
	Outputs []Output `json:"outputs"`
	// Error is set when the code raised (Python), exited non-zero or failed
	// to compile (node), or timed out.
	Error *ExecError `json:"error,omitempty"`
	// ExitCode is node's exit status (-1 when killed); for Python 0 on
	// success, 1 on error.
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

// Stdout returns everything printed to stdout.
func (r *Result) Stdout() string { return r.stream("stdout") }

// Stderr returns everything printed to stderr.
func (r *Result) Stderr() string { return r.stream("stderr") }

func (r *Result) stream(name string) string {
	var b strings.Builder
	for _, o := range r.Outputs {
		if o.Kind == OutputStream && o.Name == name {
			b.WriteString(o.Text)
		}
	}
	return b.String()
}

// Output kinds.
const (
	OutputStream  = "stream"  // printed text; Name says which stream
	OutputResult  = "result"  // the value of the cell's last expression
	OutputDisplay = "display" // display() calls, figures
)

// Output is one piece of output.
type Output struct {
	Kind   string  `json:"kind"`
	Name   string  `json:"name,omitempty"` // stream: "stdout" or "stderr"
	Text   string  `json:"text,omitempty"` // stream text, or text/plain
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
	limit     int // bytes per stream
	maxImages int
	images    int
	written   map[string]int
}

func (c *collector) stream(name, text string) {
	if c.written == nil {
		c.written = make(map[string]int)
	}
	if room := c.limit - c.written[name]; len(text) > room {
		room = max(room, 0)
		// Cut on a character boundary so that the text stays valid UTF-8.
		for room > 0 && !utf8.RuneStart(text[room]) {
			room--
		}
		text = text[:room]
		c.res.Truncated = true
	}
	if text == "" {
		return
	}
	c.written[name] += len(text)
	if n := len(c.res.Outputs); n > 0 && c.res.Outputs[n-1].Kind == OutputStream && c.res.Outputs[n-1].Name == name {
		c.res.Outputs[n-1].Text += text
		return
	}
	c.res.Outputs = append(c.res.Outputs, Output{Kind: OutputStream, Name: name, Text: text})
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
	c.res.Outputs, c.written, c.images = nil, nil, 0
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
