package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/toolbox"
)

// Tool names.
const (
	NameBash     = "bash"
	NameEditor   = "str_replace_based_edit_tool"
	NameComputer = "computer"
	NameCode     = "execute_code"
	NameRecall   = "recall"
	NameFinish   = "finish"
)

// Box is the part of toolboxd's client the tools use; *toolbox.Client
// implements it.
type Box interface {
	CreateSession(ctx context.Context, req toolbox.SessionRequest) (*toolbox.Session, error)
	RestartSession(ctx context.Context, id string) (*toolbox.Session, error)
	Run(ctx context.Context, session string, req toolbox.RunRequest) (*toolbox.RunResult, error)
	ReadFile(ctx context.Context, path string) ([]byte, error)
	ReadLines(ctx context.Context, path string, start, end int) ([]byte, int, error)
	WriteFile(ctx context.Context, path string, data []byte) error
	Stat(ctx context.Context, path string) (*toolbox.FileInfo, error)
	ListDepth(ctx context.Context, path string, depth int) (*toolbox.ListResult, error)
	Delete(ctx context.Context, path string, recursive bool) error
	RunCode(ctx context.Context, req toolbox.CodeRequest) (*toolbox.CodeResult, error)
	Screenshot(ctx context.Context) (*toolbox.Screenshot, error)
	DesktopAction(ctx context.Context, a toolbox.DesktopAction) (*toolbox.DesktopResult, error)
}

var _ Box = (*toolbox.Client)(nil)

// Env is what the tools work with.
type Env struct {
	Box Box
	// Workspace is the sandbox's workspace as an absolute path.
	Workspace string
	// Desktop offers the computer tool.
	Desktop bool
	// Session is the id of the bash session (default "agent").
	Session string
	// Resumed says the run continues an earlier one, whose in-memory
	// state (the editor's undo history) is gone.
	Resumed bool
	// Recall searches the job's history (see agent/memory) and returns
	// what the model is shown.
	Recall func(ctx context.Context, query string) (string, error)
	// Bash timeouts: the hard limit when the model gives none (default
	// 120s), the longest it may ask for (default 1h), and how long a
	// command may print nothing before the call returns with it still
	// running (default 30s).
	BashTimeout     time.Duration
	BashMaxTimeout  time.Duration
	BashIdleTimeout time.Duration
	// MaxOutput caps a bash reply in bytes (default 30000); the whole
	// output is saved in the workspace.
	MaxOutput int
	// CodeTimeout bounds one execute_code call (default 120s).
	CodeTimeout time.Duration
	// DisplayWidth and DisplayHeight are the desktop's size in screenshot
	// pixels, which the computer tool declares to the model (default
	// DefaultDisplayWidth x DefaultDisplayHeight).
	DisplayWidth, DisplayHeight int
	// SettleDelay is the pause between a desktop action and the
	// screenshot that shows its effect (default 500ms).
	SettleDelay time.Duration
	Log         *slog.Logger
	// Ask, when set, offers ask_user (interactive jobs): it records the
	// question, waits for an answer or a timeout, and returns what the
	// model is told.
	Ask func(ctx context.Context, question string) (string, error)
}

// Result is what a tool call returns to the model.
type Result struct {
	Output  string
	IsError bool
	Images  []Image
	// OutputPath names the file that holds the whole output when the tool
	// had to cut it (bash).
	OutputPath string
	// Finish is set by a successful finish call, with its summary.
	Finish  bool
	Summary string
}

// Image is a picture a tool returned, with its size in pixels.
type Image struct {
	llm.Image
	Width, Height int
}

func errorf(format string, args ...any) Result {
	return Result{Output: fmt.Sprintf(format, args...), IsError: true}
}

// failure turns an error of the sandbox into a result; the message is the
// user-facing one of a *drydock.Error, or the error text.
func failure(what string, err error) Result {
	msg := drydock.ErrorMessage(err)
	if drydock.ErrorCode(err) == drydock.EINTERNAL {
		msg = err.Error()
	}
	return errorf("%s: %s", what, msg)
}

// tool is one tool.
type tool struct {
	def llm.Tool
	run func(ctx context.Context, input json.RawMessage) Result
}

// Set is the tools of one run.
type Set struct {
	env   Env
	tools []tool
	by    map[string]*tool
}

// New returns the tool set for env.
func New(env Env) *Set {
	if env.Session == "" {
		env.Session = "agent"
	}
	if env.BashTimeout == 0 {
		env.BashTimeout = 120 * time.Second
	}
	if env.BashMaxTimeout == 0 {
		env.BashMaxTimeout = time.Hour
	}
	if env.BashIdleTimeout == 0 {
		env.BashIdleTimeout = 30 * time.Second
	}
	if env.MaxOutput == 0 {
		env.MaxOutput = 30000
	}
	if env.CodeTimeout == 0 {
		env.CodeTimeout = 120 * time.Second
	}
	if env.DisplayWidth <= 0 || env.DisplayHeight <= 0 {
		env.DisplayWidth, env.DisplayHeight = DefaultDisplayWidth, DefaultDisplayHeight
	}
	if env.SettleDelay == 0 {
		env.SettleDelay = 500 * time.Millisecond
	}
	if env.Log == nil {
		env.Log = slog.New(slog.DiscardHandler)
	}
	s := &Set{env: env, by: map[string]*tool{}}
	b := &bash{env: &s.env}
	e := &editor{env: &s.env, history: map[string][]snapshot{}}
	s.add(bashDef, b.run)
	s.add(editorDef, e.run)
	if env.Desktop {
		c := &computer{env: &s.env}
		s.add(computerDef(env.DisplayWidth, env.DisplayHeight), c.run)
	}
	s.add(codeDef, (&code{env: &s.env}).run)
	s.add(recallDef, (&recall{env: &s.env}).run)
	if env.Ask != nil {
		s.add(askUserDef, (&askUser{env: &s.env}).run)
	}
	s.add(finishDef, runFinish)
	return s
}

func (s *Set) add(def llm.Tool, run func(context.Context, json.RawMessage) Result) {
	s.tools = append(s.tools, tool{def: def, run: run})
	for i := range s.tools {
		s.by[s.tools[i].def.Name] = &s.tools[i]
	}
}

// Defs returns the tool definitions to offer the model.
func (s *Set) Defs() []llm.Tool {
	defs := make([]llm.Tool, len(s.tools))
	for i, t := range s.tools {
		defs[i] = t.def
	}
	return defs
}

// Names lists the tools by name.
func (s *Set) Names() []string {
	var names []string
	for _, t := range s.tools {
		names = append(names, t.def.Name)
	}
	sort.Strings(names)
	return names
}

// Run runs one tool call.
func (s *Set) Run(ctx context.Context, call llm.ToolCall) Result {
	t, ok := s.by[call.Name]
	if !ok {
		return errorf("There is no tool named %q. The tools are: %s.", call.Name, strings.Join(s.Names(), ", "))
	}
	if !isObject(call.Input) {
		return errorf("The input of %s must be a JSON object matching its schema; got %s.", call.Name, clip(string(call.Input), 200))
	}
	return t.run(ctx, call.Input)
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// decode reads a tool's input, leniently: unknown fields are ignored, as
// models add them now and then.
func decode(input json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(input))
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("invalid input: %v", err)
	}
	return nil
}

// abs names a workspace path the way the model should see it: absolute.
func (e *Env) abs(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Join(e.Workspace, p)
}

// Rel names a path relative to the workspace when it lies inside it.
func (s *Set) Rel(p string) string { return s.env.rel(p) }

// rel makes a path relative to the workspace when it lies inside it, so
// that toolboxd (whose workspace may be mounted elsewhere than the model
// believes, e.g. in the local runtime) resolves it.
func (e *Env) rel(p string) string {
	p = e.abs(p)
	if e.Workspace == "" {
		return p
	}
	if p == e.Workspace {
		return "."
	}
	if r, ok := strings.CutPrefix(p, strings.TrimSuffix(e.Workspace, "/")+"/"); ok {
		return r
	}
	return p
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func schema(s string) json.RawMessage {
	if !json.Valid([]byte(s)) {
		panic("tools: invalid schema " + s)
	}
	return json.RawMessage(s)
}

var finishDef = llm.Tool{
	Name:        NameFinish,
	Description: "End the task. Call this once, when the task is complete (or cannot be completed), with a summary for the user: what you did, where the results are in the workspace, how to use or check them, and anything left undone. Nothing runs after it.",
	InputSchema: schema(`{"type":"object","properties":{"summary":{"type":"string","description":"What was done, where the results are, and what is left, for the user."}},"required":["summary"]}`),
}

func runFinish(_ context.Context, input json.RawMessage) Result {
	var in struct {
		Summary string `json:"summary"`
	}
	if err := decode(input, &in); err != nil {
		return errorf("finish: %v", err)
	}
	if strings.TrimSpace(in.Summary) == "" {
		return errorf("finish: summary is required: say what you did and where the results are.")
	}
	return Result{Output: "The task is finished.", Finish: true, Summary: strings.TrimSpace(in.Summary)}
}
