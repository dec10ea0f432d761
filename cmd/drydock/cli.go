package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
	"github.com/drydockhq/drydock/termtext"
)

// Globals are the flags every client command shares, and where commands
// write, so tests can capture it.
type Globals struct {
	URL   string `name:"url" env:"DRYDOCK_URL" default:"http://127.0.0.1:8080" help:"URL of the Drydock server."`
	Token string `name:"token" env:"DRYDOCK_TOKEN" help:"API token (ddk_...); not needed for a server in loopback development mode."`

	Out io.Writer `kong:"-"`
	Err io.Writer `kong:"-"`
	In  io.Reader `kong:"-"` // for "drydock schedule -"

	// notify replaces the SIGINT/SIGTERM context in tests; color forces
	// colours on or off.
	notify func(context.Context) (context.Context, context.CancelFunc)
	color  *bool
}

// Client returns an SDK client for the configured server and token.
func (g *Globals) Client() *client.Client {
	return client.New(g.URL, g.Token, client.WithUserAgent("drydock-cli/"+version))
}

func (g *Globals) out() io.Writer {
	if g.Out == nil {
		return os.Stdout
	}
	return g.Out
}

func (g *Globals) errw() io.Writer {
	if g.Err == nil {
		return os.Stderr
	}
	return g.Err
}

func (g *Globals) in() io.Reader {
	if g.In == nil {
		return os.Stdin
	}
	return g.In
}

// signalContext returns a context that ends on Ctrl-C or SIGTERM, and a
// function that tells whether that is why it ended, so commands can stop
// following a job without cancelling it and say so.
func (g *Globals) signalContext() (ctx context.Context, interrupted func() bool, stop context.CancelFunc) {
	if g.notify != nil {
		ctx, stop = g.notify(context.Background())
	} else {
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	}
	return ctx, func() bool { return ctx.Err() != nil }, stop
}

// colorful reports whether w is a terminal that wants colours (NO_COLOR and
// TERM=dumb turn them off).
func (g *Globals) colorful(w io.Writer) bool {
	if g.color != nil {
		return *g.color
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// explain turns an SDK error into one line that names the fix. id is the
// job the command was about, if any. The server's words in it are escaped
// for the terminal (main escapes every error again; escaping is
// idempotent).
func (g *Globals) explain(err error, id string) error {
	if err == nil {
		return nil
	}
	var ce *client.ConnError
	var fe *client.ForeignAnswerError
	if errors.As(err, &ce) || errors.As(err, &fe) {
		return err // its message names the URL and the fix already
	}
	var de *drydock.Error
	if !errors.As(err, &de) {
		return err
	}
	de = &drydock.Error{Code: termtext.Line(de.Code), Message: termtext.Line(de.Message)}
	switch de.Code {
	case drydock.EUNAUTHORIZED:
		if g.Token == "" {
			return fmt.Errorf("401 unauthorized: the server at %s needs an API token: set DRYDOCK_TOKEN or --token (an admin creates one with `drydock token create`)", g.URL)
		}
		return fmt.Errorf("401 unauthorized: the server at %s rejected the token (%s): set DRYDOCK_TOKEN or --token to a valid one", g.URL, de.Message)
	case drydock.EFORBIDDEN:
		return fmt.Errorf("403 forbidden: %s: use a token that is allowed to (an admin token sees every job)", de.Message)
	case drydock.ENOTFOUND:
		if id != "" {
			return fmt.Errorf("job %s not found (or it belongs to another token): list yours with `drydock jobs`", id)
		}
		return fmt.Errorf("not found: %s: is %s a Drydock server? (set DRYDOCK_URL)", de.Message, g.URL)
	case drydock.EUNAVAILABLE:
		return fmt.Errorf("the server at %s is unavailable (%s): try again shortly", g.URL, de.Message)
	case "method_not_allowed":
		return fmt.Errorf("%s: is %s a Drydock server of this version? (set DRYDOCK_URL)", de.Message, g.URL)
	}
	return fmt.Errorf("%s: %s", de.Code, de.Message)
}

// writeJSON prints v as one line of JSON. The characters a terminal acts on
// that encoding/json leaves raw (DEL, C1 controls, bidirectional overrides)
// are written as \u escapes: the same document to jq, nothing hidden on a
// terminal.
func writeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termtext.JSON(b.Bytes()))
	return err
}

// safe is text from the server or a sandbox made fit for one line of the
// terminal: control characters and bidirectional overrides shown visibly
// (package termtext). Every such value passes through it, or through
// safeText for multi-line text, before it is printed or coloured.
func safe(s string) string { return termtext.Line(s) }

// safeText is safe for multi-line text: it keeps newlines and tabs.
func safeText(s string) string { return termtext.Text(s) }

// cmdWord is a value from the server (a job id, a cursor) as a word of a
// command the user may copy: escaped for the terminal and quoted for the
// shell, so pasting it runs nothing the server chose.
func cmdWord(s string) string { return shellWord(safe(s)) }

// ansi wraps s in an SGR colour code when on is set.
func ansi(on bool, code, s string) string {
	if !on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

const (
	red    = "31"
	green  = "32"
	yellow = "33"
	cyan   = "36"
	bold   = "1"
	dim    = "2"
)

func statusColor(s drydock.JobStatus) string {
	switch s {
	case drydock.StatusComplete:
		return green
	case drydock.StatusError:
		return red
	case drydock.StatusCancelled:
		return yellow
	case drydock.StatusRunning:
		return cyan
	}
	return dim
}

// truncate shortens s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// firstLine returns the first non-blank line of s, trimmed, with "…" when
// more lines follow.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	line, rest, more := strings.Cut(s, "\n")
	line = strings.TrimSpace(line)
	if more && strings.TrimSpace(rest) != "" {
		line += " …"
	}
	return line
}

// age says how long ago t was, in the largest whole unit: "42s", "5m", "3h",
// "4d".
func age(now, t time.Time) string {
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// bytesize prints n with a binary unit: "812 B", "1.2 MiB".
func bytesize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func cost(usd float64) string {
	switch {
	case usd == 0:
		return "-"
	case usd < 0.01:
		return fmt.Sprintf("$%.4f", usd)
	}
	return fmt.Sprintf("$%.2f", usd)
}

// thousands formats n with comma separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
