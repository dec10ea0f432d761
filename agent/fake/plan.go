package fake

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"text/template"

	"github.com/drydockhq/drydock/agent/tools"
)

//go:embed templates
var templateFS embed.FS

// templates are the project files, named by their path under templates/.
var templates = func() map[string]*template.Template {
	funcs := template.FuncMap{
		"json":   func(s string) (string, error) { b, err := json.Marshal(s); return string(b), err },
		"pyrepr": pyString,
		"quote":  quote,
	}
	m := map[string]*template.Template{}
	err := fs.WalkDir(templateFS, "templates", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := templateFS.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "templates/")
		m[name], err = template.New(name).Funcs(funcs).Option("missingkey=error").Parse(string(b))
		return err
	})
	if err != nil {
		panic("fake: " + err.Error())
	}
	return m
}()

// Kinds of project the demo writes, by what the task asks for.
const (
	kindReact  = "react"
	kindNode   = "node"
	kindPython = "python"
	kindPyGUI  = "pygui"
)

// project is what the demo builds for one task; the templates read it.
type project struct {
	Kind, KindText string
	// Name is the project's directory in the workspace, made of the task's
	// words ("todo-app-react").
	Name string
	// Task is the task without directives, cut to maxQuoted; TaskLine its
	// first line.
	Task, TaskLine string
	// Noun names what the project's list holds: "todo" when the task
	// mentions todos, else "item".
	Noun, Nouns, Class, Classes, Title string
	Desktop                            bool
	// Files are the project's files, relative to its directory.
	Files []string
}

// file is one file of a project: where it goes (NOUN and NOUNS are
// replaced), its template, and what the demo says as it writes it.
type file struct{ path, tmpl, why string }

var layouts = map[string][]file{
	kindReact: {
		{"README.md", "README.md", "a README that quotes the task and says how to run the app"},
		{"package.json", "react/package.json", "package.json: React and Vite, with dev, build and test scripts"},
		{"index.html", "react/index.html", "the page Vite serves"},
		{"vite.config.js", "react/vite.config.js", "the Vite configuration, with the React plugin"},
		{"src/main.jsx", "react/main.jsx", "the entry point that mounts the app"},
		{"src/NOUNS.js", "js/logic.js", "the NOUN logic as pure functions, so that it is tested without a browser"},
		{"src/App.jsx", "react/App.jsx", "the App component: a form to add NOUNS, a list to tick them off"},
		{"src/NOUNS.test.js", "js/logic.test.js", "tests for the NOUN logic (node --test, no install needed)"},
	},
	kindNode: {
		{"README.md", "README.md", "a README that quotes the task and says how to run the project"},
		{"package.json", "node/package.json", "package.json with start and test scripts (no dependencies)"},
		{"src/NOUNS.js", "js/logic.js", "the NOUN logic as pure functions"},
		{"server.js", "node/server.js", "a small JSON API over the NOUNS (node:http)"},
		{"src/NOUNS.test.js", "js/logic.test.js", "tests for the NOUN logic (node --test)"},
	},
	kindPython: {
		{"README.md", "README.md", "a README that quotes the task and says how to run the project"},
		{"NOUN.py", "python/logic.py", "the NOUN list, kept in a JSON file, with a command line"},
		{"test_NOUN.py", "python/test_logic.py", "unit tests for the NOUN list (unittest, standard library only)"},
	},
	kindPyGUI: {
		{"README.md", "README.md", "a README that quotes the task and says how to run the app"},
		{"NOUN.py", "python/logic.py", "the NOUN list, kept in a JSON file, with a command line"},
		{"app.py", "python/app.py", "the window: a Tk app over the NOUN list"},
		{"test_NOUN.py", "python/test_logic.py", "unit tests for the NOUN list (unittest, standard library only)"},
	},
}

// maxQuoted bounds how much of the task the README quotes.
const maxQuoted = 2000

var (
	words     = regexp.MustCompile(`[a-z0-9]+`)
	stopwords = map[string]bool{}
)

func init() {
	for _, w := range strings.Fields(`a an and are as at be build can create do for from give i in is it let
		make me my need of on please some that the this to up us use using want we with write you your simple
		small new`) {
		stopwords[w] = true
	}
}

// newProject reads what the task asks for. A task the demo does not
// recognise gets a small Python project.
func newProject(task string, desktop bool) *project {
	clean := strings.TrimSpace(directive.ReplaceAllString(task, ""))
	if clean == "" {
		clean = "(no task text besides directives)"
	}
	low := strings.ToLower(clean)
	has := func(ws ...string) bool {
		for _, w := range ws {
			if regexp.MustCompile(`\b` + regexp.QuoteMeta(w) + `\b`).MatchString(low) {
				return true
			}
		}
		return false
	}
	p := &project{Desktop: desktop}
	switch {
	case has("react"):
		p.Kind, p.KindText = kindReact, "React + Vite app"
	case has("tkinter", "tk") || (has("python") && has("gui", "window", "desktop")):
		p.Kind, p.KindText = kindPyGUI, "Python GUI app (Tk)"
	case has("node", "nodejs", "node.js", "javascript", "typescript", "express", "npm"):
		p.Kind, p.KindText = kindNode, "Node.js project"
	default:
		p.Kind, p.KindText = kindPython, "Python project"
	}
	p.Noun = "item"
	if has("todo", "todos", "to-do") {
		p.Noun = "todo"
	}
	p.Nouns = p.Noun + "s"
	p.Class = strings.ToUpper(p.Noun[:1]) + p.Noun[1:]
	p.Classes = p.Class + "s"
	p.Title = p.Classes
	p.Name = slug(low)
	p.Task = clean
	if len(p.Task) > maxQuoted {
		p.Task = strings.ToValidUTF8(p.Task[:maxQuoted], "") + " [...]"
	}
	p.TaskLine = firstLine(clean)
	for _, f := range layouts[p.Kind] {
		p.Files = append(p.Files, p.path(f.path))
	}
	return p
}

// slug names the project after the task's first three meaningful words.
func slug(task string) string {
	var parts []string
	for _, w := range words.FindAllString(task, -1) {
		if stopwords[w] || len(w) > 20 {
			continue
		}
		parts = append(parts, w)
		if len(parts) == 3 {
			break
		}
	}
	if len(parts) == 0 {
		return "project"
	}
	return strings.Join(parts, "-")
}

func (p *project) path(s string) string {
	return strings.NewReplacer("NOUNS", p.Nouns, "NOUN", p.Noun).Replace(s)
}

func (p *project) render(f file) (string, error) {
	t, ok := templates[f.tmpl]
	if !ok {
		return "", fmt.Errorf("no template %s", f.tmpl)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, p); err != nil {
		return "", fmt.Errorf("render %s: %w", f.path, err)
	}
	return b.String(), nil
}

// testCommand runs the project's tests from its directory.
func (p *project) testCommand() string {
	switch p.Kind {
	case kindReact, kindNode:
		return "node --test src/" + p.Nouns + ".test.js"
	}
	return "python3 -m unittest -v"
}

// step is one tool call of the demo, with what the "model" says before it.
type step struct {
	say   string
	tool  string
	input map[string]any
	// tests marks the step that runs the project's tests; the summary
	// says how it went.
	tests bool
}

// steps plans the demo in a workspace: look around, write the project,
// run its tests, use it, show it on the desktop, finish. The plan depends
// only on the task, the profile and the workspace, so a resumed run
// replans the same steps and skips those the log shows as done. The
// finish step is added by the caller, since its summary reports results.
func (p *project) steps(workspace string) ([]step, error) {
	dir := path.Join(workspace, p.Name)
	cd := "cd " + shellQuote(dir) + " && "
	bash := func(say, cmd string) step {
		return step{say: say, tool: tools.NameBash, input: map[string]any{"command": cmd}}
	}
	s := []step{bash(
		fmt.Sprintf("The task asks for a %s. I will look at the workspace and at the tools this sandbox has first.", p.KindText),
		"cd "+shellQuote(workspace)+` && echo "workspace: $PWD" && ls -A && python3 --version && node --version && `+
			`{ command -v npm >/dev/null && echo "npm $(npm --version)" || echo "npm: not installed"; } && git --version`,
	)}
	for _, f := range layouts[p.Kind] {
		text, err := p.render(f)
		if err != nil {
			return nil, err
		}
		s = append(s, step{
			say:   fmt.Sprintf("Writing %s: %s.", p.path(f.path), p.path(f.why)),
			tool:  tools.NameEditor,
			input: map[string]any{"command": "create", "path": path.Join(dir, p.path(f.path)), "file_text": text},
		})
	}
	tests := bash("Now I run the tests in the sandbox.", cd+p.testCommand())
	tests.tests = true
	s = append(s, tests)
	if p.Kind == kindPython || p.Kind == kindPyGUI {
		s = append(s, bash("The command line works on a real file too:",
			cd+"python3 "+p.Noun+`.py add "Try the command line" && python3 `+p.Noun+".py list"))
	}
	s = append(s, bash("The project as it stands:",
		"cd "+shellQuote(workspace)+" && find "+shellQuote(p.Name)+` -type f -not -path '*/__pycache__/*' | sort && du -sh `+shellQuote(p.Name)))
	if p.Desktop {
		s = append(s, p.desktopSteps(cd)...)
	}
	return s, nil
}

// desktopSteps open the result on the sandbox's display and look at it
// through the computer tool, so the screenshot lands in the event log.
func (p *project) desktopSteps(cd string) []step {
	// Shells of a desktop sandbox should have DISPLAY; the fallback names
	// toolboxd's display for images whose shells do not.
	show := "export DISPLAY=\"${DISPLAY:-:1}\" && "
	term := fmt.Sprintf(`nohup xterm -title %s -geometry 110x34+20+20 -hold -e bash -c %s >/dev/null 2>&1 & echo "opened a terminal on the desktop (pid $!)"`,
		shellQuote(p.Name), shellQuote("head -n 5 README.md; echo; find . -type f -not -path '*/__pycache__/*' | sort; echo; echo '$ "+p.testCommand()+"'; "+p.testCommand()))
	cmd, say := cd+show+term, "I will open the project in a terminal on the desktop, so that it can be seen."
	if p.Kind == kindPyGUI {
		cmd = cd + show + `if python3 -c 'import tkinter' 2>/dev/null; then nohup python3 app.py >app.log 2>&1 & echo "started the app (pid $!)"; else echo "tkinter is not installed here; showing a terminal instead"; ` + term + "; fi"
		say = "I will start the app on the desktop."
	}
	return []step{
		{say: say, tool: tools.NameBash, input: map[string]any{"command": cmd}},
		{say: "Let me look at the desktop.", tool: tools.NameComputer, input: map[string]any{"action": "wait", "duration": 2}},
	}
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// pyString is s as a Python string literal.
func pyString(s string) string {
	b, _ := json.Marshal(s) // a JSON string is a valid Python literal
	return string(b)
}

// quote makes a Markdown block quote of s.
func quote(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight("> "+l, " ")
	}
	return strings.Join(lines, "\n")
}
