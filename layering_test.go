package drydock_test

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/drydockhq/drydock"

// pkgInfo is what `go list` says of one package of the module.
type pkgInfo struct {
	imports []string // direct
	deps    []string // transitive
}

// listPackages runs `go list` over the module (tests excluded: a test may
// reach anything it exercises).
func listPackages(t *testing.T) map[string]pkgInfo {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH; the layering rules are checked with go list")
	}
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}}|{{join .Imports ","}}|{{join .Deps ","}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkgInfo{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "|")
		if len(f) != 3 {
			continue
		}
		pkgs[f[0]] = pkgInfo{imports: splitList(f[1]), deps: splitList(f[2])}
	}
	return pkgs
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// within reports whether path is the module's package rel or one below it.
func within(path, rel string) bool {
	p := module + "/" + rel
	return path == p || strings.HasPrefix(path, p+"/")
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// The layering the architecture states, enforced: a forbidden import fails
// here instead of being found in review. Each rule says why it holds.
func TestLayering(t *testing.T) {
	pkgs := listPackages(t)
	if _, ok := pkgs[module]; !ok {
		t.Fatalf("go list did not list the root package %s", module)
	}
	for _, imp := range pkgs[module].imports {
		if !isStd(imp) {
			t.Errorf("the root package imports %s: the domain types depend on the standard library only, so that every other package can import them", imp)
		}
	}

	rules := []struct {
		from   string   // packages at or below this path
		never  []string // may not depend on these, even indirectly
		reason string
	}{
		{"cmd/toolboxd", []string{"api", "runner", "store", "llm", "runtime", "agent", "client", "pool", "web", "watch", "artifact", "secretbox", "egress", "image", "bench"},
			"toolboxd runs inside the sandbox: orchestrator code linked into it is attack surface and weight in every sandbox"},
		{"runtime", []string{"store", "api", "runner"},
			"a runtime creates sandboxes and knows nothing of where jobs are kept or served"},
		{"store", []string{"runtime", "toolbox", "api", "runner", "llm", "agent"},
			"a store keeps records and knows nothing of sandboxes or agents"},
		{"llm", []string{"toolbox", "runtime", "desktop", "kernel", "agent", "runner", "api", "store"},
			"a model provider speaks to a model and knows nothing of sandboxes"},
		{"client", []string{"api", "runner", "store", "runtime", "agent", "llm"},
			"the client speaks HTTP to a server and must build without the server's code"},
		{"eval", []string{"api", "runner", "store", "runtime", "agent", "llm", "pool", "web"},
			"drydock eval is a client of a running server, as a user's own harness would be"},
	}
	for path, p := range pkgs {
		for _, r := range rules {
			if !within(path, r.from) {
				continue
			}
			for _, d := range p.deps {
				for _, never := range r.never {
					if within(d, never) {
						t.Errorf("%s depends on %s: %s", path, d, r.reason)
					}
				}
			}
		}
	}
}

// toolboxd runs inside every sandbox, so what it links is attack surface and
// weight there. The host's side of its API (package toolbox/hostclient: one
// client per sandbox, the host's half of a claim) stays out, and so does
// every module package not listed here: linking a new one into toolboxd is
// a decision to make in this list, not a side effect of an import.
func TestToolboxdLinksOnlyTheSandboxSide(t *testing.T) {
	pkgs := listPackages(t)
	toolboxd, ok := pkgs[module+"/cmd/toolboxd"]
	if !ok {
		t.Fatalf("go list did not list %s/cmd/toolboxd", module)
	}
	sandboxSide := []string{"", "toolbox", "toolbox/server", "desktop", "kernel", "unixsock", "oomscore"}
	for _, d := range toolboxd.deps {
		if d != module && !strings.HasPrefix(d, module+"/") {
			continue // the standard library and other modules
		}
		if within(d, "toolbox/hostclient") {
			t.Errorf("cmd/toolboxd depends on %s: the orchestrator's toolbox clients have no place in the sandbox", d)
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(d, module), "/")
		if !slices.Contains(sandboxSide, rel) {
			t.Errorf("cmd/toolboxd depends on %s, which is not among the packages it may link (%s): add it there if it belongs inside every sandbox", d, strings.Join(sandboxSide[1:], ", "))
		}
	}
}

// cmd/drydock is one package, so its rule is per file: only the server's
// composition root wires the server's parts together; every other
// subcommand reaches a server through package client, as a user's program
// would.
func TestCLISubcommandsUseTheClient(t *testing.T) {
	composition := []string{"server.go", "pool.go", "runtime.go", "kube.go", "llm.go"}
	never := []string{"api", "runner", "store", "pool", "watch", "web"}
	files, err := filepath.Glob(filepath.Join("cmd", "drydock", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in cmd/drydock: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		base := filepath.Base(name)
		if strings.HasSuffix(base, "_test.go") || slices.Contains(composition, base) {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			for _, n := range never {
				if within(imp, n) {
					t.Errorf("%s imports %s: a subcommand other than the server's composition (%s) reaches the server through package client", name, imp, strings.Join(composition, ", "))
				}
			}
		}
	}
}

// The agent and the model providers are given their settings; only the
// composition root (cmd/drydock) reads the process's environment. A
// provider that picked up a key by itself would surprise a program that
// embeds it, and would make the server's configuration two places.
func TestAgentAndProvidersReadNoEnvironment(t *testing.T) {
	reads := []string{"Getenv", "LookupEnv", "Environ", "ExpandEnv"}
	fset := token.NewFileSet()
	checked := 0
	for _, root := range []string{"agent", "llm"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			checked++
			osName := ""
			for _, spec := range f.Imports {
				if spec.Path.Value == `"os"` {
					osName = "os"
					if spec.Name != nil {
						osName = spec.Name.Name
					}
				}
			}
			if osName == "" {
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == osName && slices.Contains(reads, sel.Sel.Name) {
					t.Errorf("%s: os.%s: the agent and the providers take their settings as values; read the environment in cmd/drydock", fset.Position(sel.Pos()), sel.Sel.Name)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked == 0 {
		t.Fatal("no Go files found under agent/ and llm/")
	}
}
