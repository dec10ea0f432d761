package termtext_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/drydockhq/drydock/termtext"
)

// The attacks: what a sandbox could print to take over the
// terminal of the person reading its job's logs.
const (
	osc52       = "\x1b]52;c;ZWNobyBwd25lZA==\a"       // write the clipboard
	clearScreen = "\x1b[2J"                            // clear the screen
	title       = "\x1b]0;sudo password:\x1b\\"        // set the window title
	hide        = "\x1b[8mhidden\x1b[0m"               // concealed text
	overwrite   = "rm -rf ~\rls     "                  // CR: the second part hides the first
	trojan      = "access = \u202euser\u2066 // admin" // bidi override and isolate
	c1CSI       = "\u009b31m"                          // C1 CSI, as UTF-8
	rawCSI      = "\x9b31m"                            // C1 CSI, a raw 8-bit byte
)

func TestLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello, world", "hello, world"},
		{"unicode is text", "naïve café 日本語 🚢 \ufffd", "naïve café 日本語 🚢 \ufffd"},
		{"osc 52 clipboard", osc52, `^[]52;c;ZWNobyBwd25lZA==^G`},
		{"clearScreen screen", clearScreen, "^[[2J"},
		{"window title", title, `^[]0;sudo password:^[\`},
		{"concealed text", hide, "^[[8mhidden^[[0m"},
		{"carriage return overwrite", overwrite, "rm -rf ~^Mls     "},
		{"newline and tab", "a\nb\tc", "a^Jb^Ic"},
		{"crlf", "a\r\nb", "a^M^Jb"},
		{"nul and del", "a\x00b\x7fc", "a^@b^?c"},
		{"bidi override and isolate", trojan, `access = \u202euser\u2066 // admin`},
		{"every bidi control", "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069", `\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069`},
		{"c1 csi as utf-8", c1CSI, `\u009b31m`},
		{"c1 range ends", "\u0080\u009f\u00a0", `\u0080\u009f` + "\u00a0"},
		{"c1 csi as a raw byte", rawCSI, `\x9b31m`},
		{"invalid utf-8", "a\xff\xfeb\xc3", `a\xff\xfeb\xc3`},
		{"bidi marks are text", "\u200f\u200e", "\u200f\u200e"},
	}
	for _, tt := range tests {
		if got := termtext.Line(tt.in); got != tt.want {
			t.Errorf("%s: Line(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"lines and tabs stay", "a\n\tb\n", "a\n\tb\n"},
		{"crlf is a newline", "a\r\nb\r\n", "a\nb\n"},
		{"a lone cr is shown", overwrite, "rm -rf ~^Mls     "},
		{"cr cr lf", "a\r\r\nb", "a^M\nb"},
		{"escape in output", "ok\n" + clearScreen + "\n" + osc52, "ok\n^[[2J\n" + `^[]52;c;ZWNobyBwd25lZA==^G`},
		{"vertical tab and form feed", "a\vb\fc", "a^Kb^Lc"},
		{"c1 and bidi", c1CSI + trojan + rawCSI, `\u009b31maccess = \u202euser\u2066 // admin\x9b31m`},
	}
	for _, tt := range tests {
		if got := termtext.Text(tt.in); got != tt.want {
			t.Errorf("%s: Text(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestJSONMeansTheSameAndShowsNothingHostile(t *testing.T) {
	t.Parallel()
	v := map[string]any{"task": osc52 + clearScreen + trojan + c1CSI + "\x7f", "ok": "plain ü", "n": 1}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got := termtext.JSON(append(b, '\n'))
	if bad := firstBad(string(got), true); bad >= 0 {
		t.Errorf("JSON left a control at byte %d: %q", bad, got)
	}
	var back map[string]any
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("escaped JSON does not parse: %v\n%s", err, got)
	}
	if back["task"] != v["task"] || back["ok"] != v["ok"] {
		t.Errorf("escaped JSON means something else: %q", back)
	}
	if !strings.Contains(string(got), `\u202e`) || !strings.Contains(string(got), `\u009b`) || !strings.Contains(string(got), `\u007f`) {
		t.Errorf("JSON = %s; want \\u escapes for U+202E, U+009B and DEL", got)
	}
	if clean := []byte(`{"a":"b ü"}` + "\n"); string(termtext.JSON(clean)) != string(clean) {
		t.Errorf("clean JSON changed: %q", termtext.JSON(clean))
	}
	if got := string(termtext.JSON([]byte("\"a\xffb\""))); got != `"a\ufffdb"` {
		t.Errorf("invalid UTF-8: %s", got)
	}
}

// firstBad returns the index of the first byte of s that a terminal could act
// on (multiline allows "\n" and "\t"), or -1.
func firstBad(s string, multiline bool) int {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd"):
			return i
		case multiline && (r == '\n' || r == '\t'):
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f),
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return i
		}
	}
	return -1
}

func FuzzEscapedTextHoldsNoControl(f *testing.F) {
	for _, s := range []string{osc52, clearScreen, title, hide, overwrite, trojan, c1CSI, rawCSI, "a\r\nb", "\xc2\x9b", "\xe2\x80\xae", "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line, text := termtext.Line(s), termtext.Text(s)
		if i := firstBad(line, false); i >= 0 {
			t.Fatalf("Line(%q) = %q holds a control at %d", s, line, i)
		}
		if i := firstBad(text, true); i >= 0 {
			t.Fatalf("Text(%q) = %q holds a control at %d", s, text, i)
		}
		if !utf8.ValidString(line) || !utf8.ValidString(text) {
			t.Fatalf("invalid UTF-8 out of %q", s)
		}
		if termtext.Line(line) != line || termtext.Text(text) != text {
			t.Fatalf("escaping %q twice changes it", s)
		}
		if strings.Count(text, "\n") != strings.Count(s, "\n") {
			t.Fatalf("Text(%q) = %q changed the number of lines", s, text)
		}
		if firstBad(s, false) < 0 && utf8.ValidString(s) && line != s {
			t.Fatalf("clean %q changed to %q", s, line)
		}
		// JSON keeps a document's meaning.
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		esc := termtext.JSON(b)
		if i := firstBad(string(esc), false); i >= 0 {
			t.Fatalf("JSON(%s) = %s holds a control at %d", b, esc, i)
		}
		var a, z string
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(esc, &z); err != nil || a != z {
			t.Fatalf("JSON(%s) = %s reads back as %q (%v), want %q", b, esc, z, err, a)
		}
	})
}
