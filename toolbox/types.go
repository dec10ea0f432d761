package toolbox

import (
	"time"

	"github.com/drydockhq/drydock"
)

// Headers of the protocol.
const (
	HeaderRequestID = "X-Request-Id"
	HeaderReplayed  = "Idempotent-Replayed"
	// HeaderTotalLines carries the number of lines of a file read by line range.
	HeaderTotalLines = "X-Total-Lines"
)

// Health is the body of GET /v1/health.
type Health struct {
	Status string `json:"status"` // "ok"
}

// Component names, as toolboxd reports them in Readiness and as callers
// wait for them: the one spelling for the daemon's parts (kernel, desktop)
// and for the orchestrator, which waits for them without linking those
// in-sandbox packages.
const (
	ComponentFiles         = "files"
	ComponentShell         = "shell"
	ComponentKernel        = "kernel"         // the code kernel (Python)
	ComponentNode          = "node"           // the code kernel's Node.js side
	ComponentJupyterServer = "jupyter_server" // the Jupyter server behind the live view
	ComponentDisplay       = "display"        // the desktop's X display
	ComponentWindowManager = "window_manager"
	ComponentVNC           = "vnc"
)

// Component is the readiness of one part of the sandbox.
type Component struct {
	Name    string `json:"name"`
	Ready   bool   `json:"ready"`
	Message string `json:"message,omitempty"`
}

// Readiness is the body of GET /v1/ready. Ready is true once the core
// components (files, shell) work; the others (display, vnc, kernel, ...) are
// reported so that callers can wait for the ones they need.
type Readiness struct {
	Ready      bool        `json:"ready"`
	Components []Component `json:"components"`
}

// Component returns the named component and whether it was reported.
func (r *Readiness) Component(name string) (Component, bool) {
	for _, c := range r.Components {
		if c.Name == name {
			return c, true
		}
	}
	return Component{}, false
}

// Info is the body of GET /v1/info.
type Info struct {
	APIVersion int             `json:"api_version"`
	Version    string          `json:"version"`
	Profile    drydock.Profile `json:"profile"`
	Workspace  string          `json:"workspace"`
	Desktop    bool            `json:"desktop"` // desktop routes are served
	Code       bool            `json:"code"`    // code routes are served
}

// File types in FileInfo.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// FileInfo describes one file. Path is relative to the workspace root, with
// forward slashes.
type FileInfo struct {
	Name       string    `json:"name"`
	Path       string    `json:"path"`
	Type       string    `json:"type"`
	Size       int64     `json:"size"`
	Mode       uint32    `json:"mode"` // permission bits, e.g. 0o644
	ModTime    time.Time `json:"mod_time"`
	LinkTarget string    `json:"link_target,omitempty"`
}

// ListResult is the body of GET /v1/files/list: the entries below the
// directory, sorted by path, down to the requested depth.
type ListResult struct {
	Entries   []FileInfo `json:"entries"`
	Truncated bool       `json:"truncated,omitempty"` // more entries than the server lists at once
}

// MoveRequest renames a file or directory. Without Overwrite an existing
// destination is a conflict.
type MoveRequest struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// MkdirRequest creates a directory and its missing parents. An existing
// directory is not an error.
type MkdirRequest struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode,omitempty"` // default 0o755
}

// TarResult is the body of PUT /v1/files/tar.
type TarResult struct {
	Files int   `json:"files"`
	Dirs  int   `json:"dirs"`
	Links int   `json:"links"`
	Bytes int64 `json:"bytes"`
	// Skipped counts entries that have no place in a workspace (devices, fifos).
	Skipped int `json:"skipped,omitempty"`
}

// SessionRequest creates a persistent shell session.
type SessionRequest struct {
	ID  string            `json:"id,omitempty"`  // default: generated
	Cwd string            `json:"cwd,omitempty"` // default: the workspace root
	Env map[string]string `json:"env,omitempty"`
}

// Session is a persistent bash whose cwd, environment and background jobs
// survive from one command to the next.
type Session struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	Running   bool      `json:"running"` // a command is in progress
	Pid       int       `json:"pid"`
	// Command is the running command's text (its start, when long) and
	// CommandStartedAt when it began; set while Running.
	Command          string    `json:"command,omitempty"`
	CommandStartedAt time.Time `json:"command_started_at,omitzero"`
}

// RunRequest runs a command in a session. An empty Command while a command is
// still running (see RunResult.Running) waits for more of its output.
type RunRequest struct {
	Command string `json:"command,omitempty"`
	// Timeout is the hard limit, counted from the command's start: the command
	// is interrupted (Ctrl-C), and if it does not stop the shell is killed.
	// On a wait (no command) it gives the running command this much more time.
	Timeout drydock.Duration `json:"timeout,omitempty"`
	// IdleTimeout returns early, with the command still running, when it has
	// printed nothing for this long.
	IdleTimeout drydock.Duration `json:"idle_timeout,omitempty"`
	// MaxOutput caps the bytes of output in the reply (head and tail are
	// kept); the whole output is saved in the workspace.
	MaxOutput int `json:"max_output,omitempty"`
}

// RunResult is what one run (or wait, or interrupt) of a session saw.
type RunResult struct {
	CommandID string `json:"command_id,omitempty"`
	// Output is stdout and stderr interleaved, as far as it was not returned
	// by an earlier reply for the same command.
	Output      string `json:"output"`
	Truncated   bool   `json:"truncated,omitempty"`
	OutputBytes int64  `json:"output_bytes"` // of the whole command so far
	// OutputPath is where the whole output is kept when the reply had to cut
	// it (an absolute path inside the sandbox).
	OutputPath string `json:"output_path,omitempty"`
	// ExitCode is the command's status; -1 while it runs or when it was killed.
	ExitCode int `json:"exit_code"`
	// Running means the reply came back before the command ended (the soft
	// timeout); run the session again with no command to keep waiting, or
	// interrupt it.
	Running     bool `json:"running,omitempty"`
	TimedOut    bool `json:"timed_out,omitempty"`
	Interrupted bool `json:"interrupted,omitempty"`
	// ShellExited means the shell itself ended (the command ran exit, it
	// was killed after the hard timeout, or the OOM killer took it); the
	// next command gets a fresh shell in the workspace root, without the old
	// cwd, variables or jobs.
	ShellExited bool `json:"shell_exited,omitempty"`
	// FreshShell means the command ran in a new shell because the session's
	// previous one ended while no command ran (killed, e.g. by the OOM
	// killer): the old cwd, variables and background jobs are gone.
	FreshShell bool `json:"fresh_shell,omitempty"`
	// ShellEnd says how the shell ended, with ShellExited or FreshShell:
	// "exited with status 0", "ended by signal 9 (killed)".
	ShellEnd string `json:"shell_end,omitempty"`
	// OutOfMemory is set when the kernel's OOM killer ended processes in
	// the sandbox since the session's previous reply.
	OutOfMemory *OutOfMemory     `json:"out_of_memory,omitempty"`
	Duration    drydock.Duration `json:"duration"`
}

// OutOfMemory says that the sandbox ran out of memory: the kernel's OOM
// killer ended Kills processes. The sizes are those when the reply was made;
// Mounts are the directories whose files are kept in memory (tmpfs) and so
// count against the limit.
type OutOfMemory struct {
	Kills      int64        `json:"kills"`
	LimitBytes int64        `json:"limit_bytes,omitempty"` // 0: no limit known
	UsageBytes int64        `json:"usage_bytes,omitempty"`
	Mounts     []MountUsage `json:"mounts,omitempty"`
	// Message says what happened and what to do, for the model.
	Message string `json:"message"`
}

// MountUsage is how full one in-memory filesystem is.
type MountUsage struct {
	Path      string `json:"path"`
	UsedBytes int64  `json:"used_bytes"`
	SizeBytes int64  `json:"size_bytes"`
}

// ExecRequest runs one process outside any session. Either Command (run by
// bash -c) or Args (run directly) is set.
type ExecRequest struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Stdin   []byte            `json:"stdin,omitempty"`
	Timeout drydock.Duration  `json:"timeout,omitempty"`
}

// Exec frame types.
const (
	FrameStdout = "stdout"
	FrameStderr = "stderr"
	FrameExit   = "exit"
	FrameError  = "error"
)

// ExecFrame is one line of the newline-delimited JSON stream of POST
// /v1/exec. The last frame is of type "exit" or "error".
type ExecFrame struct {
	Type     string               `json:"type"`
	Data     []byte               `json:"data,omitempty"`      // stdout, stderr
	ExitCode int                  `json:"exit_code,omitempty"` // exit
	TimedOut bool                 `json:"timed_out,omitempty"`
	Duration drydock.Duration     `json:"duration,omitempty"`
	Error    *drydock.ErrorDetail `json:"error,omitempty"`
	// OutOfMemory (exit) is set when the OOM killer ended processes in the
	// sandbox while the process ran.
	OutOfMemory *OutOfMemory `json:"out_of_memory,omitempty"`
}

// ExecResult is how a one-shot process ended.
type ExecResult struct {
	ExitCode    int           `json:"exit_code"` // -1 when killed by a signal
	TimedOut    bool          `json:"timed_out,omitempty"`
	Duration    time.Duration `json:"duration"`
	OutOfMemory *OutOfMemory  `json:"out_of_memory,omitempty"`
}

// Languages of CodeRequest.
const (
	LangPython     = "python"
	LangJavaScript = "javascript"
	LangTypeScript = "typescript"
)

// CodeRequest runs code: python in the sandbox's persistent kernel,
// javascript and typescript with node.
type CodeRequest struct {
	Language string           `json:"language"`
	Code     string           `json:"code"`
	Timeout  drydock.Duration `json:"timeout,omitempty"`
}

// Code output kinds.
const (
	OutputStream = "stream" // text printed to stdout or stderr
	OutputResult = "result" // the value of the last expression
	OutputError  = "error"  // an exception with its traceback
	OutputImage  = "image"  // e.g. a matplotlib figure
)

// CodeOutput is one piece of what code produced, in order.
type CodeOutput struct {
	Kind     string `json:"kind"`
	Name     string `json:"name,omitempty"` // stream: "stdout" or "stderr"; error: the exception name
	Text     string `json:"text,omitempty"`
	MimeType string `json:"mime_type,omitempty"` // image: e.g. "image/png"
	Data     []byte `json:"data,omitempty"`      // image bytes
}

// CodeResult is the outcome of a CodeRequest. Error is set when the code
// raised or exited non-zero; TimedOut when it was interrupted.
type CodeResult struct {
	Outputs  []CodeOutput `json:"outputs"`
	Error    bool         `json:"error,omitempty"`
	TimedOut bool         `json:"timed_out,omitempty"`
	// OutOfMemory is set when the kernel's OOM killer ended processes in
	// the sandbox while the code ran (the Python kernel, node, or others).
	OutOfMemory *OutOfMemory     `json:"out_of_memory,omitempty"`
	Duration    drydock.Duration `json:"duration"`
}

// Screenshot is a PNG of the sandbox display, scaled to fit 1280x800. Scale
// is screen pixels per image pixel: a point (x, y) of the image is
// (x*Scale, y*Scale) on the screen.
type Screenshot struct {
	PNG          []byte  `json:"png"`
	Width        int     `json:"width"`
	Height       int     `json:"height"`
	ScreenWidth  int     `json:"screen_width"`
	ScreenHeight int     `json:"screen_height"`
	Scale        float64 `json:"scale"`
}

// DesktopAction is one action of the computer tool. Coordinates are in
// screenshot pixels; the desktop maps them to the screen.
type DesktopAction struct {
	Action          string           `json:"action"` // left_click, type, key, scroll, ...
	Coordinate      []int            `json:"coordinate,omitempty"`
	StartCoordinate []int            `json:"start_coordinate,omitempty"`
	Text            string           `json:"text,omitempty"`
	ScrollDirection string           `json:"scroll_direction,omitempty"`
	ScrollAmount    int              `json:"scroll_amount,omitempty"`
	Duration        drydock.Duration `json:"duration,omitempty"`
}

// DesktopResult is what a desktop action reports; Cursor is set by
// cursor_position (in screenshot pixels).
type DesktopResult struct {
	Cursor []int `json:"cursor,omitempty"`
}
