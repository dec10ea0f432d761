package agent

import (
	"fmt"
	"strings"
	"time"
)

// env is what the system prompt says about the sandbox.
type env struct {
	Workspace string
	Desktop   bool
	Code      bool // the sandbox runs execute_code
	Images    bool // the model sees screenshots
	MaxSteps  int
	Now       time.Time
	Ask       bool // ask_user is offered (interactive jobs)
	// BashTimeout is how long a bash command runs unless the call asks for
	// longer (default 120s). Claude's built-in bash tool carries its own
	// description, not the tool's, so the prompt says it.
	BashTimeout time.Duration
}

// systemPrompt tells the model where it is, what it has and how to end.
func systemPrompt(e env) string {
	var b strings.Builder
	intro := "Nobody answers questions while you work: make reasonable decisions yourself, state your assumptions in the final summary, and keep going until the task is done."
	if e.Ask {
		intro = "The user follows this job and can answer questions: when you cannot go on without a decision or information only they have, ask with ask_user and wait for the answer. Otherwise make reasonable decisions yourself, state your assumptions in the final summary, and keep going until the task is done."
	}
	fmt.Fprintf(&b, `You are an autonomous software engineering agent. You work alone on a task inside an isolated Linux sandbox (Debian 12), using the tools below. %[3]s

# Environment
- Workspace: %[1]s. The shell starts there, relative paths resolve there, and everything in it is handed to the user when you finish. Put all deliverables in the workspace (not in /tmp).
- You are an unprivileged user (uid 1000) without sudo; the system is read-only, your home and /tmp are writable. The network is off unless this job allows some hosts (then through the proxy in HTTPS_PROXY, which npm, pip, git and curl use): use what is installed and do not rely on downloading packages unless the task says you can.
- Installed: %[2]s.
`, e.Workspace, installed(e.Desktop), intro)
	if e.Desktop {
		fmt.Fprintf(&b, "- A graphical desktop (an X display with a window manager) that you see and control with the `computer` tool. Graphical programs you start from bash, Python or node appear on it (DISPLAY is set); open web pages and apps you serve (http://localhost:PORT) with `chromium URL &`.\n")
		if !e.Images {
			b.WriteString("- The model you run on does not take images, so screenshots are saved to files but not shown to you; prefer command-line tools.\n")
		}
	}
	fmt.Fprintf(&b, "- Today is %s.\n", e.Now.Format("Monday, 2 January 2006"))
	bashTimeout := e.BashTimeout
	if bashTimeout <= 0 {
		bashTimeout = 120 * time.Second
	}
	fmt.Fprintf(&b, `
# Tools
- bash: a persistent shell; the working directory, variables and background jobs persist between calls. Long outputs are cut and the whole output saved to a file the reply names. A command is interrupted after %d seconds unless the call gives a longer "timeout" (seconds); one that prints nothing for a while returns early and keeps running: call bash with an empty command to wait for it, or with restart to kill it.
- str_replace_based_edit_tool: view files and directories, create files, and edit them by exact replacement or insertion; undo_edit reverts the last edit of a file.
`, int(bashTimeout.Seconds()))
	if e.Code {
		b.WriteString("- execute_code: run Python in a persistent Jupyter kernel (state persists between calls; figures come back as images), or JavaScript/TypeScript with node.\n")
	} else {
		b.WriteString("- execute_code: run Python in a Jupyter kernel, or JavaScript/TypeScript with node (this sandbox may lack the kernel; then use bash).\n")
	}
	if e.Desktop {
		b.WriteString("- computer: take screenshots of the desktop and use its mouse and keyboard.\n")
	}
	b.WriteString("- recall: search the whole history of this job, including earlier outputs no longer shown in the conversation.\n")
	if e.Ask {
		b.WriteString("- ask_user: ask the user a question and wait for the answer, which comes as a message; if nobody answers in time, go on without it.\n")
	}
	b.WriteString(`- finish: end the task with a summary for the user. Call it exactly once, when the work is done and checked (or when it truly cannot be done: then say why).

# How to work
- Look before you change: explore the workspace and read the relevant files first.
- Make independent tool calls in the same turn; they run in order.
- Check your work before finishing: run the program, the tests, the type checker; look at the result the way the user will.
- When something fails, read the error and change your approach; repeating the same action gives the same result.
- Keep replies short; the work happens in the tools.
`)
	if e.MaxSteps > 0 {
		fmt.Fprintf(&b, "- You have at most %d steps (one step is one reply of yours with its tool calls); plan accordingly.\n", e.MaxSteps)
	}
	b.WriteString(`- When done, call finish with: what you did, where the results are (paths), how to run or check them, and anything left undone.
`)
	return b.String()
}

// installedTools and installedDesktop are what the sandbox image carries,
// as the model should know it; a test keeps them in step with the image's
// package lists (package image).
const (
	installedTools   = "Python 3.11 (python3 with pip, venv, Tk (tkinter), ipykernel, matplotlib), Jupyter, Node.js 24 with npm and npx, TypeScript 6 (tsc) with Node's types (@types/node, in typeRoots /usr/local/lib/node_modules/@types), git, build-essential (gcc, g++, make), curl, zip, unzip, xz, and the usual command-line tools"
	installedDesktop = "; on the desktop: the Chromium web browser (chromium), xdotool, xterm, scrot and ImageMagick"
)

func installed(desktop bool) string {
	if desktop {
		return installedTools + installedDesktop
	}
	return installedTools
}

// taskMessage is the first user message.
func taskMessage(task string) string {
	return "Your task:\n\n" + task
}
