package web_test

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// The web UI decodes event data by hand, in plain JavaScript without a
// build step; this test keeps it to the root package's payload types. Each
// reader below is a function of web/static that reads one payload through
// one variable; every field it reads (`d.size`, `img.path`) must be a JSON
// field of that payload's type. In timeline.js's render, `d` is the data of
// the kind of the case it is read in.
func TestTheUIReadsOnlyFieldsOfThePayloadTypes(t *testing.T) {
	t.Parallel()
	readers := []struct {
		file, function, variable string
		typ                      reflect.Type // nil: by the kind of each case
	}{
		{"timeline.js", "render", "d", nil},
		{"timeline.js", "render", "c", reflect.TypeFor[drydock.ModelToolCall]()},
		{"timeline.js", "shot", "img", reflect.TypeFor[drydock.ImageRef]()},
		{"pause.js", "renderPause", "d", reflect.TypeFor[drydock.PauseEvent]()},
		{"evals.js", "evalPage", "e.data", reflect.TypeFor[drydock.LogEvent]()}, // caller_command's exit code
	}
	for _, r := range readers {
		src, err := os.ReadFile("static/" + r.file)
		if err != nil {
			t.Fatal(err)
		}
		body := function(string(src), r.function)
		if body == "" {
			t.Errorf("%s has no function %s", r.file, r.function)
			continue
		}
		if r.typ != nil {
			checkReads(t, r.file+" "+r.function, body, r.variable, r.typ)
			continue
		}
		cases := kindCases(body)
		if len(cases) < 10 {
			t.Errorf("%s %s: found only %d cases of event kinds", r.file, r.function, len(cases))
		}
		for kind, code := range cases {
			typ, ok := drydock.EventDataTypes[drydock.EventType(kind)]
			if !ok {
				t.Errorf("%s %s has a case for %q, which is no kind of event", r.file, r.function, kind)
				continue
			}
			checkReads(t, r.file+" "+r.function+" case '"+kind+"'", code, r.variable, typ)
		}
	}
}

var jsFunction = regexp.MustCompile(`(?m)^(?:export )?(?:async )?function (\w+)\(`)

// function is the source of the top-level function name in src, up to the
// next top-level function.
func function(src, name string) string {
	locs := jsFunction.FindAllStringSubmatchIndex(src, -1)
	for i, l := range locs {
		if src[l[2]:l[3]] != name {
			continue
		}
		end := len(src)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		return src[l[0]:end]
	}
	return ""
}

var jsCase = regexp.MustCompile(`case '([a-z_]+)':|default:`)

// kindCases splits a switch on the kind into the code of each case; cases
// that share a body each get it.
func kindCases(body string) map[string]string {
	out := map[string]string{}
	locs := jsCase.FindAllStringSubmatchIndex(body, -1)
	var waiting []string
	for i, l := range locs {
		end := len(body)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		if l[2] < 0 {
			waiting = nil
			continue // default: whatever the kind, it reads no field
		}
		waiting = append(waiting, body[l[2]:l[3]])
		code := body[l[1]:end]
		if strings.TrimSpace(code) == "" {
			continue // falls through to the next case's body
		}
		for _, k := range waiting {
			out[k] = code
		}
		waiting = nil
	}
	return out
}

func checkReads(t *testing.T, where, code, variable string, typ reflect.Type) {
	t.Helper()
	fields := jsonFields(typ)
	reads := regexp.MustCompile(`\b`+regexp.QuoteMeta(variable)+`\??\.([A-Za-z_]\w*)`).FindAllStringSubmatch(code, -1)
	seen := map[string]bool{}
	for _, m := range reads {
		if !slices.Contains(fields, m[1]) && !seen[m[1]] {
			seen[m[1]] = true
			t.Errorf("%s reads %s.%s; drydock.%s has %v", where, variable, m[1], typ.Name(), fields)
		}
	}
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			out = append(out, jsonFields(f.Type)...)
		case f.IsExported() && name != "-":
			out = append(out, name)
		}
	}
	return out
}
