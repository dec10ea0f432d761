package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/secretbox"
	"github.com/drydockhq/drydock/toolbox"
)

// A held sandbox (a job scheduled with agent "none") is the
// caller's: these routes run commands and write files in it, through the
// same toolboxd path the agent's bash and editor tools take.

// Limits of the caller's commands. The output is capped like the agent's
// bash replies (toolboxd keeps the head and tail and saves the whole output
// in the workspace).
const (
	DefaultCommandTimeout = 2 * time.Minute
	MaxCommandTimeout     = 30 * time.Minute
	MaxCommandOutput      = 30000
	MaxCommandBytes       = 64 << 10
	// callerSession is the bash session of the caller's commands: the
	// working directory, variables and background jobs persist between
	// calls, as they do for the agent.
	callerSession = "caller"
)

// CommandRequest is the body of POST /v1/jobs/{id}/commands.
type CommandRequest struct {
	Command string           `json:"command"`
	Timeout drydock.Duration `json:"timeout"`
}

var commandBody = bodyHelp{fields: "command, timeout", example: `{"command": "ls -la"}`}

// CommandResult is the answer of POST /v1/jobs/{id}/commands: how the
// command ended and its output (stdout and stderr interleaved), with the
// job's secret values masked.
type CommandResult struct {
	JobID    string `json:"job_id"`
	ExitCode int    `json:"exit_code"`
	Output   string `json:"output"`
	// Truncated says the output was cut to its head and tail; OutputPath is
	// the workspace file that holds all of it.
	Truncated   bool   `json:"truncated,omitempty"`
	OutputBytes int64  `json:"output_bytes"`
	OutputPath  string `json:"output_path,omitempty"`
	TimedOut    bool   `json:"timed_out,omitempty"`
	// ShellExited says the command ended the shell (exit, a kill); the
	// next command starts a fresh one in the workspace.
	ShellExited bool `json:"shell_exited,omitempty"`
}

// WriteFileRequest is the body of PUT /v1/jobs/{id}/files/{path}.
type WriteFileRequest struct {
	Text *string `json:"text"`
}

var writeFileBody = bodyHelp{fields: "text", example: `{"text": "print('hello')\n"}`}

// WrittenFile is the answer of PUT /v1/jobs/{id}/files/{path}.
type WrittenFile struct {
	JobID string `json:"job_id"`
	Path  string `json:"path"`
	Size  int64  `json:"size"`
}

// heldSandbox finds the running sandbox of a job that holds it for its
// caller, or says why there is none.
func (s *Server) heldSandbox(r *http.Request, job *drydock.Job) (*drydock.Sandbox, error) {
	if !job.NoAgent() {
		return nil, drydock.Errorf(drydock.ECONFLICT, "job %s has an agent working in its sandbox; commands and file writes are for jobs scheduled with \"agent\": %q, whose sandbox is held for you", job.ID, drydock.AgentNone)
	}
	return s.sandboxOf(r.Context(), job)
}

func (s *Server) handleCommand(w http.ResponseWriter, r *http.Request) {
	job, err := s.lookup(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req CommandRequest
	if err := s.decodeJSON(w, r, &req, commandBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case strings.TrimSpace(req.Command) == "":
		err = drydock.Errorf(drydock.EINVALID, "command is required and must not be blank, as in %s", commandBody.example)
	case len(req.Command) > MaxCommandBytes:
		err = drydock.Errorf(drydock.ETOOLARGE, "command is %d bytes; the limit is %d (write a script with PUT .../files/{path} and run that)", len(req.Command), MaxCommandBytes)
	case strings.ContainsRune(req.Command, 0):
		err = drydock.Errorf(drydock.EINVALID, "command must not contain NUL bytes")
	case req.Timeout < 0 || time.Duration(req.Timeout) > MaxCommandTimeout:
		err = drydock.Errorf(drydock.EINVALID, "timeout must be positive and at most %s", MaxCommandTimeout)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	timeout := time.Duration(req.Timeout)
	if timeout == 0 {
		timeout = DefaultCommandTimeout
	}
	sb, err := s.heldSandbox(r, job)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	values, err := s.secretValues(job)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// As in the agent's tool output: the sandbox's own credentials
	// (toolboxd's token, the VNC password) are masked with the job's
	// secrets, should a command find them.
	values = append(values, sandboxCredentials(sb)...)
	tb := s.toolboxFor(sb)
	if _, err := tb.CreateSession(r.Context(), toolbox.SessionRequest{ID: callerSession}); err != nil && drydock.ErrorCode(err) != drydock.ECONFLICT {
		s.writeError(w, r, sandboxError(job, "start a shell", err))
		return
	}
	// The idle timeout equals the hard one: the caller waits for the end
	// of the command rather than for a pause in its output.
	res, err := tb.Run(r.Context(), callerSession, toolbox.RunRequest{Command: req.Command, Timeout: drydock.Duration(timeout),
		IdleTimeout: drydock.Duration(timeout), MaxOutput: MaxCommandOutput})
	if err != nil {
		s.writeError(w, r, sandboxError(job, "run the command", err))
		return
	}
	// Credential-shaped text (an sk-... key, a ghp_... token) is masked too,
	// declared or not, as in the agent's tool output: a command may print a
	// key it found in the sandbox, and callers pass output on to logs and
	// models.
	output := secretbox.MaskCredentials(secretbox.MaskString(res.Output, values))
	out := CommandResult{JobID: job.ID, ExitCode: res.ExitCode, Output: output,
		Truncated: res.Truncated, OutputBytes: res.OutputBytes, TimedOut: res.TimedOut || res.Running, ShellExited: res.ShellExited}
	if res.Truncated {
		out.OutputPath = res.OutputPath
	}
	// The job's log records what its caller did, as it records an agent's
	// tool calls (masked, like every event).
	s.callerEvent(r, job, values, drydock.LogEvent{Level: "info", Kind: drydock.LogCallerCommand, Command: req.Command, ExitCode: &res.ExitCode,
		OutputBytes: res.OutputBytes, Message: fmt.Sprintf("the caller ran a command (exit code %d)", res.ExitCode)})
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleWriteFile(w http.ResponseWriter, r *http.Request) {
	job, err := s.lookup(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := workspacePath(r.PathValue("path"))
	if err == nil && p == "" {
		err = drydock.Errorf(drydock.EINVALID, "name the file to write after /files/, relative to the workspace root")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req WriteFileRequest
	if err := s.decodeJSON(w, r, &req, writeFileBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Text == nil {
		s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "text is required (the file's whole content), as in %s", writeFileBody.example))
		return
	}
	if !utf8.ValidString(*req.Text) {
		s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "text must be valid UTF-8"))
		return
	}
	sb, err := s.heldSandbox(r, job)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	values, err := s.secretValues(job)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// toolboxd confines the path to the workspace and never follows a
	// link out of it.
	if err := s.toolboxFor(sb).WriteFile(r.Context(), p, []byte(*req.Text)); err != nil {
		s.writeError(w, r, sandboxFileError(p, err))
		return
	}
	size := int64(len(*req.Text))
	s.callerEvent(r, job, values, drydock.LogEvent{Level: "info", Kind: drydock.LogCallerWrite, Path: p, Size: size,
		Message: fmt.Sprintf("the caller wrote %s (%d bytes)", p, size)})
	writeJSON(w, http.StatusOK, WrittenFile{JobID: job.ID, Path: p, Size: size})
}

// callerEvent appends a log event about what the caller did in a held
// sandbox; a failure to record it is logged, not the caller's error.
func (s *Server) callerEvent(r *http.Request, job *drydock.Job, values []string, data drydock.LogEvent) {
	// Credential shapes are masked in each string before encoding: a
	// private key's shape spans lines, and across encoded fields it would
	// swallow the JSON between them.
	for _, f := range []*string{&data.Message, &data.Command, &data.Path} {
		*f = secretbox.MaskCredentials(*f)
	}
	ev := drydock.NewEvent(job.ID, drydock.EventLog, data)
	if len(values) > 0 {
		ev.Data = []byte(secretbox.MaskString(string(ev.Data), values))
	}
	if err := s.store.AppendEvent(r.Context(), ev); err != nil {
		s.log.Warn("record a caller's action in the job's log", "job_id", job.ID, "err", err)
	}
}

// sandboxCredentials are the sandbox's own secrets long enough to be
// masked.
func sandboxCredentials(sb *drydock.Sandbox) []string {
	var out []string
	for _, v := range []string{sb.Token, sb.VNCPassword} {
		if len(v) >= 8 {
			out = append(out, v)
		}
	}
	return out
}

// sandboxError says what failed in a held sandbox without toolboxd's
// internals.
func sandboxError(job *drydock.Job, what string, err error) error {
	switch drydock.ErrorCode(err) {
	case drydock.ECONFLICT:
		return drydock.Errorf(drydock.ECONFLICT, "job %s: %s", job.ID, drydock.ErrorMessage(err))
	case drydock.EINVALID, drydock.ETOOLARGE, drydock.ENOTFOUND:
		return err
	case drydock.EUNAVAILABLE:
		return drydock.Errorf(drydock.EUNAVAILABLE, "the sandbox of job %s does not answer; try again", job.ID)
	}
	return fmt.Errorf("%s in the sandbox of job %s: %w", what, job.ID, err)
}
