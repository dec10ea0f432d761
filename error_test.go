package drydock

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// Answers without an error body map to the codes the API itself would have
// used for those statuses, and gateway failures stay retryable.
func TestCodeOfStatus(t *testing.T) {
	for status, want := range map[int]string{
		400: EINVALID, 422: EINVALID, 401: EUNAUTHORIZED, 403: EFORBIDDEN, 404: ENOTFOUND,
		405: "method_not_allowed", 409: ECONFLICT, 413: ETOOLARGE, 415: "unsupported_media_type",
		501: ENOTIMPLEMENTED, 429: EUNAVAILABLE, 502: EUNAVAILABLE, 503: EUNAVAILABLE, 504: EUNAVAILABLE,
		500: EINTERNAL, 418: EINTERNAL,
	} {
		if got := CodeOfStatus(status); got != want {
			t.Errorf("CodeOfStatus(%d) = %q; want %q", status, got, want)
		}
	}
}

// Every code declared in error.go has its own status in the one table,
// and a bare status reads back as the code that owns it.
func TestEveryCodeHasAStatus(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "error.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			for i, name := range spec.(*ast.ValueSpec).Names {
				if lit, ok := spec.(*ast.ValueSpec).Values[i].(*ast.BasicLit); ok && strings.HasPrefix(name.Name, "E") {
					code, _ := strconv.Unquote(lit.Value)
					codes = append(codes, code)
				}
			}
		}
	}
	if len(codes) < 15 {
		t.Fatalf("found only %d codes in error.go: %v", len(codes), codes)
	}
	ambiguous := map[string]bool{ELEASELOST: true, EKEYREUSED: true, ETOOMANY: true}
	for _, c := range codes {
		s, ok := statusOf[c]
		if !ok {
			t.Errorf("code %q has no HTTP status in statusOf", c)
			continue
		}
		if !ambiguous[c] && CodeOfStatus(s) != c {
			t.Errorf("CodeOfStatus(%d) = %q, want %q", s, CodeOfStatus(s), c)
		}
	}
	if HTTPStatus("no_such_code") != 500 {
		t.Error("an unknown code is not an internal error")
	}
}
