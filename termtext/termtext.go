package termtext

import (
	"strings"
	"unicode/utf8"
)

// Line returns s with every control character, newlines and tabs included,
// and every bidirectional override shown visibly. For one-line fields.
func Line(s string) string { return escape(s, false) }

// Text is Line for multi-line text: it keeps "\n" and "\t", and turns
// "\r\n" into "\n" (a carriage return before a newline hides nothing). A
// carriage return anywhere else, which could overwrite what precedes it, is
// shown as ^M.
func Text(s string) string { return escape(s, true) }

// JSON returns b, the output of a JSON encoder, with the characters a
// terminal would act on written as \u escapes inside the strings, so that
// the document means the same to a JSON reader and shows the same to a
// person. encoding/json escapes C0 controls but passes DEL, C1 controls and
// bidirectional overrides through raw. Outside strings b holds only ASCII,
// of which only "\n" and "\t" (indentation) are kept as they are; a byte
// that is not UTF-8 becomes \ufffd, as encoding/json itself would make it.
func JSON(b []byte) []byte {
	i := firstUnsafe(string(b), true)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			if unsafeASCII(c, true) {
				out = appendU(out, rune(c))
			} else {
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = appendU(out, utf8.RuneError)
		case unsafeRune(r):
			out = appendU(out, r)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

func escape(s string, multiline bool) string {
	i := firstUnsafe(s, multiline)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case multiline && c == '\r' && i+1 < len(s) && s[i+1] == '\n':
				// dropped: the newline that follows does what it would
			case !unsafeASCII(c, multiline):
				b.WriteByte(c)
			case c == 0x7f:
				b.WriteString("^?")
			default:
				b.WriteByte('^')
				b.WriteByte(c + 0x40)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			const hex = "0123456789abcdef"
			b.WriteString(`\x`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		case unsafeRune(r):
			b.Write(appendU(nil, r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnsafe returns the index of the first byte of s that escape would
// change, or -1, so that clean text (nearly all of it) is returned as is.
func firstUnsafe(s string, multiline bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if unsafeASCII(c, multiline) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unsafeRune(r) {
			return i
		}
		i += size
	}
	return -1
}

func unsafeASCII(c byte, multiline bool) bool {
	if multiline && (c == '\n' || c == '\t') {
		return false
	}
	return c < 0x20 || c == 0x7f
}

// unsafeRune reports the non-ASCII characters a terminal acts on, or that
// reorder the text around them.
func unsafeRune(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || // C1 controls
		(r >= 0x202a && r <= 0x202e) || // LRE, RLE, PDF, LRO, RLO
		(r >= 0x2066 && r <= 0x2069) // LRI, RLI, FSI, PDI
}

// appendU appends r as a JSON-style \uXXXX escape.
func appendU(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}
