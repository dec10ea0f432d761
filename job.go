package drydock

import (
	"strings"
	"time"
	"unicode/utf8"
)

// JobStatus is the lifecycle state of a job as the API reports it.
type JobStatus string

const (
	StatusPending   JobStatus = "pending"
	StatusRunning   JobStatus = "running"
	StatusComplete  JobStatus = "complete"
	StatusError     JobStatus = "error"
	StatusCancelled JobStatus = "cancelled"
)

// Terminal reports whether no further transition can happen.
func (s JobStatus) Terminal() bool {
	return s == StatusComplete || s == StatusError || s == StatusCancelled
}

// Valid reports whether s is one of the five statuses.
func (s JobStatus) Valid() bool {
	switch s {
	case StatusPending, StatusRunning, StatusComplete, StatusError, StatusCancelled:
		return true
	}
	return false
}

// Profile selects what runs in the sandbox.
type Profile string

const (
	ProfileHeadless Profile = "headless" // no display stack; fastest start
	ProfileDesktop  Profile = "desktop"  // Xvfb, window manager, VNC, xdotool
)

// Valid reports whether p is a known profile.
func (p Profile) Valid() bool { return p == ProfileHeadless || p == ProfileDesktop }

// Limits on what a job request may carry. They keep one request from filling
// the store and are enforced by JobSpec.Validate.
const (
	MaxTaskBytes      = 256 << 10
	MaxMetadataKeys   = 32
	MaxMetadataKeyLen = 64
	MaxMetadataValLen = 1024
	MaxModelLen       = 200
	MaxJobSteps       = 100000
	MaxJobTimeout     = 7 * 24 * time.Hour
	// A context budget below MinContextBudget leaves no room for the system
	// prompt, the task and one tool round; 1M is the largest window offered.
	MinContextBudget = 4000
	MaxContextBudget = 1_000_000
)

// JobSpec is what a user asks for. Zero values mean "the server's default".
type JobSpec struct {
	Task     string            `json:"task"`
	Model    string            `json:"model,omitempty"`
	MaxSteps int               `json:"max_steps,omitempty"`
	Timeout  Duration          `json:"timeout,omitempty"`
	Profile  Profile           `json:"profile,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// ContextBudget caps the tokens of each prompt; 0 derives it from the
	// model's context window.
	ContextBudget int `json:"context_budget,omitempty"`
	// Egress lists the host[:port] destinations the sandbox may reach
	// (ParseEgressRule); empty means none. It can change while the job runs.
	Egress []string `json:"egress,omitempty"`
	// Secrets are environment variables for every process of the
	// sandbox whose values are masked wherever the job's output goes
	// (events, errors, the archive). Write-only: a job read back shows
	// SecretNames only.
	Secrets SecretValues `json:"secrets,omitempty"`
	// Repo is the git repository cloned into the workspace before the
	// agent starts; nil starts from an empty workspace.
	Repo *RepoSpec `json:"repo,omitempty"`
	// Interactive offers the agent the ask_user tool: it may ask the
	// user a question and wait for a message (Store.AppendMessage).
	Interactive bool `json:"interactive,omitempty"`
	// Agent is who works in the sandbox: "" the server's agent, AgentNone
	// nobody: the sandbox is prepared as for any job (isolation, egress,
	// secrets, upload or repository) and held for the caller, who runs
	// commands and writes files in it, until the job's timeout or a cancel.
	Agent string `json:"agent,omitempty"`
}

// AgentNone is JobSpec.Agent for a job whose sandbox is held for its caller
// rather than given to an agent.
const AgentNone = "none"

// NoAgent reports whether the job holds its sandbox for the caller.
func (s *JobSpec) NoAgent() bool { return s.Agent == AgentNone }

// Normalize trims the task and fills no defaults: defaults are the server's
// business (config), not the domain's.
func (s *JobSpec) Normalize() {
	s.Task = strings.TrimSpace(s.Task)
	s.Model = strings.TrimSpace(s.Model)
	s.Agent = strings.TrimSpace(s.Agent)
	for i, e := range s.Egress {
		s.Egress[i] = strings.TrimSpace(e)
	}
	if s.Repo != nil {
		s.Repo.Normalize()
	}
}

// Validate checks the spec and returns an EINVALID or ETOOLARGE *Error that
// names the offending field.
func (s *JobSpec) Validate() error {
	if s.Agent != "" && s.Agent != AgentNone {
		return Errorf(EINVALID, "agent must be omitted (the server's agent) or %q (a sandbox held for you, with no agent)", AgentNone)
	}
	if s.NoAgent() && s.Interactive {
		return Errorf(EINVALID, "interactive needs an agent to ask questions; a job with agent %q has none", AgentNone)
	}
	// A held sandbox has nothing to do a task, so it may go without one.
	if s.Task == "" && !s.NoAgent() {
		return Errorf(EINVALID, "task is required and must not be blank")
	}
	if len(s.Task) > MaxTaskBytes {
		return Errorf(ETOOLARGE, "task is %d bytes; the limit is %d", len(s.Task), MaxTaskBytes)
	}
	// NUL bytes and invalid UTF-8 cannot be stored in Postgres text; refuse
	// them here so that every store behaves the same.
	if !utf8.ValidString(s.Task) || strings.ContainsRune(s.Task, 0) {
		return Errorf(EINVALID, "task must be valid UTF-8 text without NUL bytes")
	}
	if !utf8.ValidString(s.Model) || strings.ContainsRune(s.Model, 0) {
		return Errorf(EINVALID, "model must be valid UTF-8 text without NUL bytes")
	}
	if len(s.Model) > MaxModelLen {
		return Errorf(EINVALID, "model name is longer than %d characters", MaxModelLen)
	}
	if s.MaxSteps < 0 || s.MaxSteps > MaxJobSteps {
		return Errorf(EINVALID, "max_steps must be between 1 and %d", MaxJobSteps)
	}
	if s.Timeout < 0 || time.Duration(s.Timeout) > MaxJobTimeout {
		return Errorf(EINVALID, "timeout must be positive and at most %s", MaxJobTimeout)
	}
	if s.Timeout != 0 && time.Duration(s.Timeout) < time.Second {
		return Errorf(EINVALID, "timeout must be at least 1s")
	}
	if s.Profile != "" && !s.Profile.Valid() {
		return Errorf(EINVALID, "profile must be %q or %q", ProfileHeadless, ProfileDesktop)
	}
	if s.ContextBudget != 0 && (s.ContextBudget < MinContextBudget || s.ContextBudget > MaxContextBudget) {
		return Errorf(EINVALID, "context_budget must be between %d and %d tokens (or omitted for the model's default)", MinContextBudget, MaxContextBudget)
	}
	if _, err := ParseEgress(s.Egress); err != nil {
		return err
	}
	if err := s.Secrets.Validate(); err != nil {
		return err
	}
	if s.Repo != nil {
		if err := s.Repo.Validate(s.Secrets); err != nil {
			return err
		}
	}
	if len(s.Metadata) > MaxMetadataKeys {
		return Errorf(EINVALID, "metadata has %d keys; the limit is %d", len(s.Metadata), MaxMetadataKeys)
	}
	for k, v := range s.Metadata {
		if k == "" || len(k) > MaxMetadataKeyLen {
			return Errorf(EINVALID, "metadata keys must be 1 to %d characters", MaxMetadataKeyLen)
		}
		if len(v) > MaxMetadataValLen {
			return Errorf(EINVALID, "metadata value for %q is longer than %d characters", k, MaxMetadataValLen)
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) || strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			return Errorf(EINVALID, "metadata keys and values must be valid UTF-8 text without NUL bytes")
		}
	}
	return nil
}

// Usage is the model usage of a job, summed over its steps.
type Usage struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd"`
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		CostUSD:          u.CostUSD + v.CostUSD,
	}
}

// Job is one task run by an agent in one sandbox. Its JSON form is the body of
// GET /status/{id} and GET /v1/jobs/{id}; the link fields are filled by the
// HTTP layer, and the queue fields never leave the server.
type Job struct {
	ID         string     `json:"job_id"`
	Status     JobStatus  `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Error      string     `json:"error"`
	Steps      int        `json:"steps"`
	Usage      Usage      `json:"usage"`
	Summary    string     `json:"summary,omitempty"`
	// SecretNames are the names of the job's secrets, sorted; the values
	// are never shown.
	SecretNames []string `json:"secret_names,omitempty"`
	// EgressSource says where Egress came from: EgressFromJob or
	// EgressFromDefault (the server's default, copied at creation).
	EgressSource string `json:"egress_source,omitempty"`
	// PushedCommit is the commit a completed job pushed to its
	// repository's push branch.
	PushedCommit string `json:"pushed_commit,omitempty"`
	// Isolation is what the job's sandbox ran under (Sandbox.Isolation);
	// set once it has one.
	Isolation string `json:"isolation,omitempty"`
	// WaitingFor is the question an interactive job's agent asked and
	// waits on an answer to; empty when it waits for nothing.
	WaitingFor string `json:"waiting_for,omitempty"`
	// ParentJobID is the finished job this one follows up: its
	// workspace starts from the parent's archive and its agent from the
	// parent's conversation. "" for a job that starts afresh.
	ParentJobID string `json:"parent_job_id,omitempty"`
	// FollowUps are the ids of the jobs that follow this one up, oldest
	// first; filled by the API for one job (Store.FollowUps), not in lists.
	FollowUps []string `json:"follow_ups,omitempty"`

	// Pause (pause.go). Paused is true while a person paused
	// the job or holds control of its desktop; PausedAt is when the
	// current pause began; PausedSeconds (set by the HTTP layer) is the
	// paused time so far, the current pause included; PausedBy names who
	// paused it, ControlBy who holds control of the desktop.
	Paused        bool       `json:"paused,omitempty"`
	PausedAt      *time.Time `json:"paused_at,omitempty"`
	PausedSeconds float64    `json:"paused_seconds,omitempty"`
	PausedBy      string     `json:"paused_by,omitempty"`
	ControlBy     string     `json:"control_holder,omitempty"`
	// PausedTotal is the length of the pauses that ended, Pauses how many
	// began (so a worker can tell that one came and went); ControlLease
	// identifies the connection that holds control, until
	// ControlExpiresAt unless renewed.
	PausedTotal      time.Duration `json:"-"`
	Pauses           int           `json:"-"`
	ControlLease     string        `json:"-"`
	ControlExpiresAt *time.Time    `json:"-"`

	JobSpec

	// Links, set by the HTTP layer for the caller's base URL.
	StatusURL string `json:"status_url,omitempty"`
	EventsURL string `json:"events_url,omitempty"`
	VNCURL    string `json:"vnc_url,omitempty"`
	// DownloadURL is the workspace as a zip, the link scripts written
	// against /status read; Result is the same link under the other name
	// such scripts use, and DownloadURLTar the tar.gz (modes and links kept
	// exactly).
	DownloadURL    string `json:"download_url,omitempty"`
	Result         string `json:"result,omitempty"`
	DownloadURLTar string `json:"download_url_tar,omitempty"`
	// DiffURL is the unified diff of the workspace against what the job
	// started from; set once the job has a sandbox.
	DiffURL string `json:"diff_url,omitempty"`

	// Server-side state.
	OwnerID         string    `json:"-"` // id of the token that created the job
	SandboxID       string    `json:"-"`
	ArtifactKey     string    `json:"-"` // set once the workspace is archived
	ArtifactSize    int64     `json:"-"`
	CancelRequested bool      `json:"-"`
	LeaseOwner      string    `json:"-"`
	LeaseExpiresAt  time.Time `json:"-"`
	Attempts        int       `json:"-"` // how many times a worker claimed it
	// SealedSecrets is Secrets encrypted under the server's key (package
	// secretbox), the only form in which a store keeps them; stores erase
	// it when the job ends.
	SealedSecrets []byte `json:"-"`
	// InputKey names the workspace archive the job starts from in the
	// ArtifactStore (an upload, normalized to tar.gz); "" starts empty.
	// The runner extracts it into the workspace before the agent starts.
	InputKey string `json:"-"`
	// InputSize is the stored size of that archive in bytes.
	InputSize int64 `json:"input_size,omitempty"`
}

// JobFilter selects jobs for a list. Cursor is the opaque value returned as
// next_cursor by the previous page.
type JobFilter struct {
	OwnerID string // "" means every owner (admin)
	Status  []JobStatus
	// Metadata keeps the jobs whose metadata has every one of these
	// key-value pairs (how drydock eval's runs are found).
	Metadata map[string]string
	Cursor   string
	Limit    int
}

// JobProgress is what a worker reports while it runs a job.
type JobProgress struct {
	Steps     int
	Usage     Usage
	SandboxID *string
	// Isolation is the sandbox's (Sandbox.Isolation), recorded with it.
	Isolation *string
}

// JobResult is how a run ended.
type JobResult struct {
	Status       JobStatus
	Error        string
	Summary      string
	ArtifactKey  string
	ArtifactSize int64
	// PushedCommit is set when the job pushed its changes (RepoPush).
	PushedCommit string
	// KeepSecrets keeps the job's sealed secrets after it ends, so that a
	// follow-up can inherit them; the runner's reaper erases
	// them once the server's follow-up window has passed
	// (Store.EraseSecretsFinishedBefore). False erases them now.
	KeepSecrets bool
}
