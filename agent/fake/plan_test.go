package fake

import "testing"

// What the demo builds follows the task's words; directives are not words.
func TestProjectFromTask(t *testing.T) {
	t.Parallel()
	cases := []struct{ task, kind, name, noun string }{
		{"Build me a todo app in React", kindReact, "todo-app-react", "todo"},
		{"build a REACT dashboard [fake:delay=0s]", kindReact, "react-dashboard", "item"},
		{"Write a Python GUI todo app", kindPyGUI, "python-gui-todo", "todo"},
		{"a tkinter calculator", kindPyGUI, "tkinter-calculator", "item"},
		{"Create a REST API in Node.js for to-do lists", kindNode, "rest-api-node", "todo"},
		{"TypeScript library for dates", kindNode, "typescript-library-dates", "item"},
		{"Summarise the harbour's tide tables", kindPython, "summarise-harbour-s", "item"},
		{"[fake:hang]", kindPython, "no-task-text", "item"},
		{"../../etc/passwd; rm -rf /", kindPython, "etc-passwd-rm", "item"},
	}
	for _, tc := range cases {
		p := newProject(tc.task, false)
		if p.Kind != tc.kind || p.Name != tc.name || p.Noun != tc.noun {
			t.Errorf("%q: kind %s, name %s, noun %s; want %s, %s, %s", tc.task, p.Kind, p.Name, p.Noun, tc.kind, tc.name, tc.noun)
		}
	}
}

// Every project's files render: a template that names a missing field
// fails here, not in a user's job.
func TestEveryLayoutRenders(t *testing.T) {
	t.Parallel()
	for kind := range layouts {
		for _, noun := range []string{"Build a todo", "Build an"} {
			p := newProject(noun+" "+map[string]string{kindReact: "React app", kindNode: "node api", kindPython: "python tool", kindPyGUI: "python gui"}[kind], true)
			if p.Kind != kind {
				t.Fatalf("%s: got kind %s", kind, p.Kind)
			}
			if _, err := p.steps("/workspace"); err != nil {
				t.Errorf("%s (%s): %v", kind, p.Noun, err)
			}
		}
	}
}
