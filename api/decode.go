package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
)

// bodyHelp is what error messages about a route's JSON body name.
type bodyHelp struct {
	fields  string // the accepted fields
	example string // a minimal valid body, shown when the body is empty
}

// decodeJSON reads exactly one JSON object from the body into v and turns
// every decoding failure into a message that says what to fix. It is
// stricter than encoding/json, which keeps the last of duplicate keys and
// replaces invalid UTF-8 silently: a body that two parsers could read two
// ways (a proxy or a log reading the first key, this server the last) is
// refused rather than guessed at.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any, help bodyHelp) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if err := bodyType(ct, jsonBodies); err != nil {
			return err
		}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return drydock.Errorf(drydock.ETOOLARGE, "request body is larger than %d bytes", maxErr.Limit)
	case err != nil:
		return fmt.Errorf("%w: %w", drydock.Errorf(drydock.EINVALID, "the request body could not be read"), err)
	case len(bytes.TrimSpace(data)) == 0:
		return drydock.Errorf(drydock.EINVALID, "request body is empty; send a JSON object such as %s", help.example)
	}
	return decodeJSONBytes(data, v, help)
}

// decodeJSONBytes is decodeJSON's strict decoding of a body already read
// (a JSON body, or the spec part of an upload).
func decodeJSONBytes(data []byte, v any, help bodyHelp) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return drydock.Errorf(drydock.EINVALID, "request body is empty; send a JSON object such as %s", help.example)
	}
	if i := invalidUTF8(data); i >= 0 {
		return drydock.Errorf(drydock.EINVALID, "request body is not valid UTF-8 (byte %d); JSON text must be UTF-8", i)
	}
	if key, where, ok := duplicateKey(data); ok {
		if where == "" {
			return drydock.Errorf(drydock.EINVALID, "duplicate key %q in the request body; give each field once", key)
		}
		return drydock.Errorf(drydock.EINVALID, "duplicate key %q in %s; give each key once", key, where)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, err := dec.Token(); err != io.EOF {
			return drydock.Errorf(drydock.EINVALID, "request body must hold a single JSON object")
		}
		return nil
	}
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return drydock.Errorf(drydock.EINVALID, "request body is truncated JSON")
	case errors.As(err, &syntaxErr):
		return drydock.Errorf(drydock.EINVALID, "malformed JSON at byte %d: %s", syntaxErr.Offset, syntaxErr.Error())
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return drydock.Errorf(drydock.EINVALID, "request body must be a JSON object")
		}
		return drydock.Errorf(drydock.EINVALID, "field %q must be a JSON %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return drydock.Errorf(drydock.EINVALID, "unknown field %s; accepted fields: %s", name, help.fields)
	}
	// Errors from custom decoders (e.g. durations) are already user-facing.
	return drydock.Errorf(drydock.EINVALID, "invalid request body: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "float64":
		return "number"
	case "map", "struct":
		return "object"
	case "slice":
		return "array"
	case "ptr":
		return "string"
	}
	return goKind
}

// invalidUTF8 is the offset of the first byte that is not UTF-8, or -1.
func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// duplicateKey finds the first key that appears twice in one object of a
// JSON text, at any depth, and where: "" for the top level, else a path
// such as `"metadata"` or `"egress"[2]`. Top-level keys are compared
// without case too, because the API decodes that object into a struct and
// encoding/json matches field names case-insensitively ("task" and "Task"
// would fill one field). Malformed JSON ends the walk without a finding:
// the decoder reports it.
func duplicateKey(data []byte) (key, where string, found bool) {
	type frame struct {
		object  bool
		keys    map[string]bool
		path    string
		key     string // the key whose value is read now
		wantKey bool
		index   int
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	// child is the path of the value now read in the innermost container.
	child := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.object {
			return f.path + fmt.Sprintf("%q", f.key)
		}
		return f.path + fmt.Sprintf("[%d]", f.index)
	}
	// valueDone moves the innermost container past the value just read.
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.object {
			f.wantKey = true
		} else {
			f.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			f := stack[n-1]
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			k, _ := tok.(string)
			seen := k
			if n == 1 || structObjects[f.path] {
				seen = strings.ToLower(k)
			}
			if f.keys[seen] {
				return k, strings.TrimSuffix(f.path, "."), true
			}
			f.keys[seen] = true
			f.key, f.wantKey = k, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			p := child()
			if p != "" {
				p += "."
			}
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, path: p, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{path: child()})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}
