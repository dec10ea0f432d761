// Package pytypes writes the Python SDK's types (sdk/python/drydock/_schema.py)
// from the API's OpenAPI document: one TypedDict per schema of
// components.schemas, with every property, so that the Python SDK cannot
// lack a field the document has (sdk/sdk_test.go regenerates and compares).
package pytypes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// schema is the part of a JSON Schema (OpenAPI 3.1) that the document uses.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 typeList           `json:"type"`
	Enum                 []any              `json:"enum"`
	Items                *schema            `json:"items"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
	OneOf                []*schema          `json:"oneOf"`
	AnyOf                []*schema          `json:"anyOf"`
	Description          string             `json:"description"`
}

// typeList is "type": a name or a list of names (3.1's nullable).
type typeList []string

func (t *typeList) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		return json.Unmarshal(b, (*[]string)(t))
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = typeList{s}
	return nil
}

type document struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]*schema `json:"schemas"`
	} `json:"components"`
}

// operation is the part of an operation that may hold inline schemas.
type operation struct {
	OperationID string `json:"operationId"`
	RequestBody struct {
		Content map[string]struct {
			Schema *schema `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Content map[string]struct {
			Schema *schema `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

// InlineSchemas returns the JSON objects that operations define in place
// rather than in components.schemas, by the name the Python module gives
// them: the operationId with Request or Response (SetJobEgressRequest,
// ExportTrajectoryResponse).
func InlineSchemas(doc []byte) (map[string]map[string]bool, error) {
	var d document
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("parse the OpenAPI document: %w", err)
	}
	inline, err := d.inline()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for _, n := range inline {
		props := map[string]bool{}
		for p := range n.s.Properties {
			props[p] = true
		}
		out[n.name] = props
	}
	return out, nil
}

func (d *document) inline() ([]named, error) {
	var out []named
	seen := map[string]bool{}
	add := func(name string, s *schema) {
		if s != nil && s.Ref == "" && len(s.Properties) > 0 && !seen[name] {
			seen[name] = true
			out = append(out, named{name, s})
		}
	}
	for path, methods := range d.Paths {
		for method, raw := range methods {
			if method == "parameters" || strings.HasPrefix(method, "x-") {
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("%s %s: %w", method, path, err)
			}
			if op.OperationID == "" {
				continue
			}
			base := strings.ToUpper(op.OperationID[:1]) + op.OperationID[1:]
			// JSON bodies only: a multipart form's parts are sent by hand.
			add(base+"Request", op.RequestBody.Content["application/json"].Schema)
			codes := make([]string, 0, len(op.Responses))
			for code := range op.Responses {
				codes = append(codes, code)
			}
			sort.Strings(codes)
			for _, code := range codes {
				if strings.HasPrefix(code, "2") {
					add(base+"Response", op.Responses[code].Content["application/json"].Schema)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

type gen struct {
	out     bytes.Buffer
	pending []named // nested object schemas still to write
	typing  map[string]bool
}

type named struct {
	name string
	s    *schema
}

// Generate returns the Python module for the document doc.
func Generate(doc []byte) ([]byte, error) {
	var d document
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("parse the OpenAPI document: %w", err)
	}
	if len(d.Components.Schemas) == 0 {
		return nil, fmt.Errorf("the OpenAPI document has no components.schemas")
	}
	g := &gen{typing: map[string]bool{}}
	names := make([]string, 0, len(d.Components.Schemas))
	for n := range d.Components.Schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g.pending = append(g.pending, named{n, d.Components.Schemas[n]})
	}
	inline, err := d.inline()
	if err != nil {
		return nil, err
	}
	for _, n := range inline {
		if d.Components.Schemas[n.name] != nil {
			return nil, fmt.Errorf("schema %s: its name is taken by an inline schema of an operation", n.name)
		}
	}
	g.pending = append(g.pending, inline...)
	var body bytes.Buffer
	for len(g.pending) > 0 {
		n := g.pending[0]
		g.pending = g.pending[1:]
		if err := g.class(&body, n.name, n.s); err != nil {
			return nil, err
		}
	}
	var head bytes.Buffer
	head.WriteString("# Code generated by sdk/internal/gensdk from api/openapi.json (make sdk); DO NOT EDIT.\n")
	head.WriteString("\"\"\"The API's schemas as TypedDicts: the JSON the server sends and takes, as dicts.\"\"\"\n\n")
	head.WriteString("from __future__ import annotations\n\n")
	imports := []string{"TypedDict"}
	for k := range g.typing {
		imports = append(imports, k)
	}
	sort.Strings(imports)
	imports = slices.Compact(imports)
	fmt.Fprintf(&head, "from typing import %s\n\n", strings.Join(imports, ", "))
	fmt.Fprintf(&head, "__all__ = [%s]\n", quoteList(g.classes(&body)))
	head.Write(body.Bytes())
	return head.Bytes(), nil
}

// classes lists the names of the classes written into body.
func (g *gen) classes(body *bytes.Buffer) []string {
	var out []string
	for _, line := range strings.Split(body.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "class "); ok {
			out = append(out, rest[:strings.IndexByte(rest, '(')])
		} else if n, _, ok := strings.Cut(line, " = TypedDict("); ok && isIdent(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

func (g *gen) class(w *bytes.Buffer, name string, s *schema) error {
	if len(s.Properties) == 0 {
		// A schema that is not an object of named fields: an alias.
		t, err := g.pyType(name, s)
		if err != nil {
			return fmt.Errorf("schema %s: %w", name, err)
		}
		fmt.Fprintf(w, "\n\n%s = %s\n", name, t)
		return nil
	}
	props := make([]string, 0, len(s.Properties))
	functional := false
	for p := range s.Properties {
		props = append(props, p)
		if !isIdent(p) {
			if !isKeyword(p) {
				return fmt.Errorf("schema %s: property %q is not a Python identifier", name, p)
			}
			// A keyword ("from") cannot name a class attribute, only a
			// key of TypedDict's functional form.
			functional = true
		}
	}
	sort.Strings(props)
	if functional {
		if d := firstSentence(s.Description); d != "" {
			fmt.Fprintf(w, "\n\n# %s", d)
		}
		fmt.Fprintf(w, "\n%s = TypedDict(%q, {\n", name, name)
	} else {
		fmt.Fprintf(w, "\n\nclass %s(TypedDict, total=False):\n", name)
		if d := firstSentence(s.Description); d != "" {
			fmt.Fprintf(w, "    %q\n\n", d)
		}
	}
	for _, p := range props {
		t, err := g.pyType(name+camel(p), s.Properties[p])
		if err != nil {
			return fmt.Errorf("schema %s, property %s: %w", name, p, err)
		}
		if slices.Contains(s.Required, p) {
			g.typing["Required"] = true
			t = "Required[" + t + "]"
		}
		if functional {
			// Quoted: the functional form evaluates its values at once,
			// and t may name a class written further down.
			fmt.Fprintf(w, "    %q: %q,\n", p, t)
		} else {
			fmt.Fprintf(w, "    %s: %s\n", p, t)
		}
	}
	if functional {
		fmt.Fprintf(w, "}, total=False)\n")
	}
	return nil
}

// pyType is the Python annotation of s; nested objects with properties
// become classes of their own named hint.
func (g *gen) pyType(hint string, s *schema) (string, error) {
	if s.Ref != "" {
		n, ok := strings.CutPrefix(s.Ref, "#/components/schemas/")
		if !ok {
			return "", fmt.Errorf("unsupported $ref %q", s.Ref)
		}
		return n, nil
	}
	if alts := append(slices.Clone(s.OneOf), s.AnyOf...); len(alts) > 0 {
		var ts []string
		for i, a := range alts {
			t, err := g.pyType(fmt.Sprintf("%s%d", hint, i+1), a)
			if err != nil {
				return "", err
			}
			ts = append(ts, t)
		}
		return union(g, ts), nil
	}
	if len(s.Type) == 0 {
		g.typing["Any"] = true
		return "Any", nil
	}
	var ts []string
	for _, t := range s.Type {
		pt, err := g.simple(hint, t, s)
		if err != nil {
			return "", err
		}
		ts = append(ts, pt)
	}
	return union(g, ts), nil
}

func (g *gen) simple(hint, t string, s *schema) (string, error) {
	switch t {
	case "string":
		if len(s.Enum) > 0 {
			g.typing["Literal"] = true
			var vs []string
			for _, e := range s.Enum {
				v, ok := e.(string)
				if !ok {
					return "", fmt.Errorf("enum value %v is not a string", e)
				}
				vs = append(vs, strconv.Quote(v))
			}
			return "Literal[" + strings.Join(vs, ", ") + "]", nil
		}
		return "str", nil
	case "integer":
		return "int", nil
	case "number":
		return "float", nil
	case "boolean":
		return "bool", nil
	case "null":
		return "None", nil
	case "array":
		if s.Items == nil {
			g.typing["Any"] = true
			return "list[Any]", nil
		}
		it, err := g.pyType(hint+"Item", s.Items)
		if err != nil {
			return "", err
		}
		return "list[" + it + "]", nil
	case "object":
		if len(s.Properties) > 0 {
			g.pending = append(g.pending, named{hint, s})
			return hint, nil
		}
		ap := bytes.TrimSpace(s.AdditionalProperties)
		if len(ap) > 0 && ap[0] == '{' {
			var v schema
			if err := json.Unmarshal(ap, &v); err != nil {
				return "", fmt.Errorf("additionalProperties: %w", err)
			}
			vt, err := g.pyType(hint+"Value", &v)
			if err != nil {
				return "", err
			}
			return "dict[str, " + vt + "]", nil
		}
		g.typing["Any"] = true
		return "dict[str, Any]", nil
	}
	return "", fmt.Errorf("unsupported type %q", t)
}

func union(g *gen, ts []string) string {
	ts = slices.Compact(ts)
	if len(ts) == 1 {
		return ts[0]
	}
	return strings.Join(ts, " | ")
}

func camel(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			return false
		}
	}
	return !isKeyword(s)
}

func isKeyword(s string) bool {
	switch s {
	case "from", "class", "def", "import", "global", "lambda", "pass", "return", "in", "is", "not", "and", "or", "if", "else", "for", "while", "with", "as", "try", "except", "finally", "raise", "del", "yield", "None", "True", "False", "async", "await", "assert", "break", "continue", "elif", "nonlocal":
		return true
	}
	return false
}

func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	return s
}
