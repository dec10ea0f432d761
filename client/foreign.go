package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/termtext"
)

// excerptRunes bounds the excerpt of a foreign answer: enough to recognise
// "502 Bad Gateway" or a login page, never the page.
const excerptRunes = 80

// ForeignAnswerError reports an answer that is not the Drydock API's: a web
// page from another server that the base URL points at, or a proxy's error
// page in front of a Drydock server. It says what came back (the status, the
// content type and a short excerpt, escaped for a terminal) and never holds
// the whole page.
//
// Its code follows the status, so drydock.ErrorCode and drydock.IsRetryable
// work on it: a gateway's 502, 503 or 504 is EUNAVAILABLE and retryable.
type ForeignAnswerError struct {
	URL         string // the server's base URL
	Method      string
	Path        string // the request's path, escaped
	StatusCode  int
	ContentType string // the media type, or "" when the answer named none
	Excerpt     string // the page's title or first words, escaped; may be ""
}

func (e *ForeignAnswerError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: the server at %s answered %d", e.Method, e.Path, e.URL, e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteString(" " + t)
	}
	if e.ContentType != "" {
		b.WriteString(" with " + e.ContentType)
	} else {
		b.WriteString(" with no content type")
	}
	if e.Excerpt != "" {
		b.WriteString(` ("` + e.Excerpt + `")`)
	}
	b.WriteString(", not the Drydock API's JSON: is it a Drydock server")
	if e.StatusCode == http.StatusBadGateway || e.StatusCode == http.StatusServiceUnavailable || e.StatusCode == http.StatusGatewayTimeout {
		b.WriteString(", or is a proxy in front of it failing")
	}
	b.WriteString("? (set DRYDOCK_URL or --url)")
	return b.String()
}

// Unwrap gives the error's code, as a *drydock.Error with the same message.
func (e *ForeignAnswerError) Unwrap() error {
	return &drydock.Error{Code: drydock.CodeOfStatus(e.StatusCode), Message: e.Error()}
}

// foreign describes an answer whose body (the part read of it) is not the
// API's.
func (c *Client) foreign(resp *http.Response, body []byte) *ForeignAnswerError {
	e := &ForeignAnswerError{StatusCode: resp.StatusCode, Excerpt: excerpt(body)}
	if c.base != nil {
		e.URL = c.base.Redacted()
	}
	if req := resp.Request; req != nil {
		e.Method, e.Path = req.Method, req.URL.EscapedPath()
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			mt = ct // shown as sent, escaped, but never at length
		}
		e.ContentType = termtext.Line(cut(mt, 60))
	}
	return e
}

// decodeError turns a non-2xx answer into an error: the server's
// *drydock.Error when it is the API's JSON error, else a
// *ForeignAnswerError.
func (c *Client) decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var env drydock.ErrorBody
	if json.Unmarshal(b, &env) == nil && env.Error.Code != "" {
		return env.Error.Err()
	}
	return c.foreign(resp, b)
}

// excerpt is what a person needs to recognise a page: an HTML page's title,
// else its first words, on one line, escaped.
func excerpt(body []byte) string {
	text := string(body)
	if t, ok := htmlTitle(text); ok {
		text = t
	} else if looksLikeHTML(text) {
		text = html.UnescapeString(stripTags(text))
	}
	return termtext.Line(cut(strings.Join(strings.Fields(text), " "), excerptRunes))
}

func looksLikeHTML(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.HasPrefix(s, "<!doctype html") || strings.HasPrefix(s, "<html") || strings.HasPrefix(s, "<head") || strings.HasPrefix(s, "<body")
}

// htmlTitle returns the text of the first <title> element of s, if any.
func htmlTitle(s string) (string, bool) {
	lower := strings.ToLower(s)
	i := strings.Index(lower, "<title")
	if i < 0 {
		return "", false
	}
	open := strings.IndexByte(lower[i:], '>')
	if open < 0 {
		return "", false
	}
	start := i + open + 1
	end := strings.Index(lower[start:], "</title")
	if end < 0 {
		return "", false
	}
	t := strings.TrimSpace(html.UnescapeString(s[start : start+end]))
	return t, t != ""
}

// stripTags drops everything between < and >, leaving a space so that words
// of adjacent elements stay apart.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
			b.WriteByte(' ')
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// cut shortens s to at most n runes, marking the cut with "…". Bytes that
// are not UTF-8 are kept as they are (one rune each), so that escaping shows
// them.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n - 1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…"
}

// headBuffer keeps the first bytes written to it and drops the rest, to
// describe an answer that was streamed into a decoder.
type headBuffer struct {
	bytes.Buffer
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - h.Len(); room > 0 {
		h.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// isJSON reports whether an answer's content type is JSON
// (application/json, or a +json type such as application/problem+json).
func isJSON(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// jsonBody returns a reader of a 2xx answer that ought to be JSON, or a
// *ForeignAnswerError when it is neither labelled JSON nor starts like a
// JSON object (a proxy may drop the label; a page is never taken for JSON).
func (c *Client) jsonBody(resp *http.Response) (io.Reader, error) {
	br := bufio.NewReader(resp.Body)
	if isJSON(resp) {
		return br, nil
	}
	head, _ := br.Peek(512)
	if t := bytes.TrimSpace(head); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return br, nil
	}
	b, _ := io.ReadAll(io.LimitReader(br, maxErrorBody))
	return nil, c.foreign(resp, b)
}
