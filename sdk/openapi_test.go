package sdk_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/sdk/internal/pytypes"
)

// These tests keep both SDKs in step with the API's document: a route or a
// schema field that api/openapi.json has and an SDK lacks fails them, and
// so does an SDK entry for a route the document no longer has.

const regenerate = "regenerate the SDKs' types with `make sdk` (go generate ./sdk), then add what a new route needs to both clients by hand (sdk/doc.go)"

type docOperation struct {
	ID, Method, Path string
}

type document struct {
	ops     []docOperation
	schemas map[string][]string // schema name -> property names
	inline  []string            // names of the schemas defined in operations
}

func loadDocument(t *testing.T) (*document, []byte) {
	t.Helper()
	raw, err := os.ReadFile("../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("parse api/openapi.json: %v", err)
	}
	doc := &document{schemas: map[string][]string{}}
	for path, methods := range d.Paths {
		for method, rawOp := range methods {
			if method == "parameters" || strings.HasPrefix(method, "x-") {
				continue
			}
			var op struct {
				OperationID string `json:"operationId"`
			}
			if err := json.Unmarshal(rawOp, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId: the SDKs' tables are keyed by it", strings.ToUpper(method), path)
				continue
			}
			doc.ops = append(doc.ops, docOperation{op.OperationID, strings.ToUpper(method), path})
		}
	}
	sort.Slice(doc.ops, func(i, j int) bool { return doc.ops[i].ID < doc.ops[j].ID })
	for name, s := range d.Components.Schemas {
		for p := range s.Properties {
			doc.schemas[name] = append(doc.schemas[name], p)
		}
		sort.Strings(doc.schemas[name])
	}
	// Objects that operations define in place are checked too (Python names
	// them after the operation; the TypeScript types hold them as
	// operations[id]).
	inline, err := pytypes.InlineSchemas(raw)
	if err != nil {
		t.Fatal(err)
	}
	for name, props := range inline {
		doc.inline = append(doc.inline, name)
		for p := range props {
			doc.schemas[name] = append(doc.schemas[name], p)
		}
		sort.Strings(doc.schemas[name])
	}
	return doc, raw
}

// sdkOperation is one entry of an SDK's table of operations.
type sdkOperation struct {
	Method, Path string
	Methods      []string // the client methods that send it
}

var (
	tsEntry = regexp.MustCompile(`(?m)^\s*(\w+): \{ method: "(\w+)", path: "([^"]+)", sdk: \[([^\]]*)\] \},?$`)
	pyEntry = regexp.MustCompile(`(?m)^\s*"(\w+)": Operation\("(\w+)", "([^"]+)", \(([^)]*)\)\),?$`)
)

func readTable(t *testing.T, file string, re *regexp.Regexp) map[string]sdkOperation {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	table := map[string]sdkOperation{}
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		var names []string
		for _, n := range strings.Split(m[4], ",") {
			if n = strings.Trim(strings.TrimSpace(n), `"`); n != "" {
				names = append(names, n)
			}
		}
		table[m[1]] = sdkOperation{Method: m[2], Path: m[3], Methods: names}
	}
	if len(table) == 0 {
		t.Fatalf("%s: no table of operations found", file)
	}
	return table
}

func TestEverySDKCoversEveryOperation(t *testing.T) {
	t.Parallel()
	doc, _ := loadDocument(t)
	sdks := []struct {
		name    string
		table   string
		re      *regexp.Regexp
		clients []string
		defined func(name string) *regexp.Regexp
	}{
		{"TypeScript", "typescript/src/operations.ts", tsEntry, []string{"typescript/src/client.ts"}, func(n string) *regexp.Regexp {
			return regexp.MustCompile(`(?m)^  (async )?\*?` + regexp.QuoteMeta(n) + `(<[^>]*>)?\(`)
		}},
		{"Python", "python/drydock/_operations.py", pyEntry, []string{"python/drydock/client.py", "python/drydock/aio.py"}, func(n string) *regexp.Regexp {
			return regexp.MustCompile(`(?m)^    (async )?def ` + regexp.QuoteMeta(n) + `\(`)
		}},
	}
	for _, s := range sdks {
		t.Run(s.name, func(t *testing.T) {
			table := readTable(t, s.table, s.re)
			var sources [][]byte
			for _, f := range s.clients {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				sources = append(sources, b)
			}
			for _, op := range doc.ops {
				got, ok := table[op.ID]
				switch {
				case !ok:
					t.Errorf("%s %s (%s) is in api/openapi.json but not in %s: %s", op.Method, op.Path, op.ID, s.table, regenerate)
					continue
				case got.Method != op.Method || got.Path != op.Path:
					t.Errorf("%s: %s has %s %s, the document %s %s", op.ID, s.table, got.Method, got.Path, op.Method, op.Path)
				case len(got.Methods) == 0:
					t.Errorf("%s: %s names no client method that sends it", op.ID, s.table)
				}
				for _, m := range got.Methods {
					for i, src := range sources {
						if !s.defined(m).Match(src) {
							t.Errorf("%s: %s says %s sends it, but %s defines no method %s", op.ID, s.table, m, s.clients[i], m)
						}
					}
				}
			}
			for id := range table {
				if !slices.ContainsFunc(doc.ops, func(o docOperation) bool { return o.ID == id }) {
					t.Errorf("%s lists %s, which api/openapi.json does not have (any more)", s.table, id)
				}
			}
		})
	}
}

func TestPythonTypesAreGenerated(t *testing.T) {
	t.Parallel()
	_, raw := loadDocument(t)
	want, err := pytypes.Generate(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("python/drydock/_schema.py")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("python/drydock/_schema.py is not what api/openapi.json generates: %s", regenerate)
	}
}

// TestPythonTypesHaveEveryField asks Python itself which keys each
// TypedDict declares, so that a hand edit of the generated module (or a bug
// of the generator) cannot drop a field.
func TestPythonTypesHaveEveryField(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	doc, _ := loadDocument(t)
	const script = `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("schema", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
print(json.dumps({n: sorted(getattr(m, n).__annotations__) for n in m.__all__ if hasattr(getattr(m, n), "__annotations__")}))
`
	out, err := exec.Command(py, "-c", script, filepath.Join("python", "drydock", "_schema.py")).Output()
	if err != nil {
		t.Fatalf("load _schema.py: %v", err)
	}
	var fields map[string][]string
	if err := json.Unmarshal(out, &fields); err != nil {
		t.Fatal(err)
	}
	for name, props := range doc.schemas {
		if len(props) == 0 {
			continue
		}
		got, ok := fields[name]
		if !ok {
			t.Errorf("schema %s has no TypedDict in drydock.types: %s", name, regenerate)
			continue
		}
		for _, p := range props {
			if !slices.Contains(got, p) {
				t.Errorf("schema %s: field %s is missing from drydock.types.%s: %s", name, p, name, regenerate)
			}
		}
	}
}

// TestTypeScriptTypesHaveEveryField reads the committed generated types
// without node: every schema's block names every property.
func TestTypeScriptTypesHaveEveryField(t *testing.T) {
	t.Parallel()
	doc, _ := loadDocument(t)
	src, err := os.ReadFile("typescript/src/schema.ts")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	start := strings.Index(s, "\n    schemas: {\n")
	if start < 0 {
		t.Fatal("typescript/src/schema.ts has no components.schemas")
	}
	s = s[start:]
	for name, props := range doc.schemas {
		if slices.Contains(doc.inline, name) {
			continue // held as operations[id] and compared whole by TestTypeScriptTypesAreGenerated
		}
		open := strings.Index(s, "\n        "+name+": {\n")
		if open < 0 {
			if len(props) > 0 {
				t.Errorf("schema %s is not in typescript/src/schema.ts: %s", name, regenerate)
			}
			continue
		}
		block := s[open+1:]
		if end := strings.Index(block, "\n        };\n"); end >= 0 {
			block = block[:end]
		}
		for _, p := range props {
			if !regexp.MustCompile(`(?m)^            ` + regexp.QuoteMeta(p) + `\??: `).MatchString(block) {
				t.Errorf("schema %s: field %s is missing from typescript/src/schema.ts: %s", name, p, regenerate)
			}
		}
	}
}

// TestTypeScriptTypesAreGenerated runs the pinned openapi-typescript on the
// document and compares its output with the committed file.
func TestTypeScriptTypesAreGenerated(t *testing.T) {
	tools := typescriptTools(t)
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	b, err := os.ReadFile("typescript/package.json")
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		t.Fatal(err)
	}
	// The flags of the package's own generate script, so that `make sdk`
	// and this test cannot disagree.
	args := strings.Fields(pkg.Scripts["generate"])
	if len(args) < 2 || args[0] != "openapi-typescript" {
		t.Fatalf("package.json's generate script is %q; want openapi-typescript ...", pkg.Scripts["generate"])
	}
	out := filepath.Join(t.TempDir(), "schema.ts")
	for i, a := range args {
		if a == "--output" && i+1 < len(args) {
			args[i+1] = out
		}
	}
	doc, _ := filepath.Abs("../api/openapi.json")
	args[1] = doc
	cmd := exec.Command(filepath.Join(tools, "node_modules", ".bin", "openapi-typescript"), args[1:]...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("typescript/src/schema.ts")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("typescript/src/schema.ts is not what openapi-typescript makes of api/openapi.json: %s", regenerate)
	}
}

// TestTypeScriptExampleTypeChecks compiles test/example.ts (the calls users
// write most) against the generated types, so a schema change that breaks
// them fails here rather than in a user's build.
//
// It compiles with the TypeScript the lockfile pins and, when there is one,
// with the host's own tsc (Debian's is 4.8), so that users on an older
// compiler can build the package too.
func TestTypeScriptExampleTypeChecks(t *testing.T) {
	tools := typescriptTools(t)
	compilers := []string{filepath.Join(tools, "node_modules", ".bin", "tsc")}
	if host, err := exec.LookPath("tsc"); err == nil {
		compilers = append(compilers, host)
	}
	for _, tsc := range compilers {
		cmd := exec.Command(tsc, "-p", "typescript/tsconfig.test.json")
		if b, err := cmd.CombinedOutput(); err != nil {
			v, _ := exec.Command(tsc, "--version").Output()
			t.Errorf("%s (%s) -p tsconfig.test.json: %v\n%s", tsc, strings.TrimSpace(string(v)), err, b)
		}
	}
}
