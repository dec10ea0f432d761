package drydock

import (
	"context"
	"maps"
	"strings"
	"time"
)

// Resources bounds what one sandbox may use. Zero means the runtime default.
type Resources struct {
	CPUs           float64 `json:"cpus,omitempty"`
	MemoryBytes    int64   `json:"memory_bytes,omitempty"`
	PidsLimit      int64   `json:"pids_limit,omitempty"`
	WorkspaceBytes int64   `json:"workspace_bytes,omitempty"`
	TmpBytes       int64   `json:"tmp_bytes,omitempty"`
}

// SandboxSpec is what the orchestrator asks a Runtime for.
type SandboxSpec struct {
	JobID     string            `json:"job_id"`
	Image     string            `json:"image"`
	Profile   Profile           `json:"profile"`
	Resources Resources         `json:"resources"`
	Env       map[string]string `json:"env,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Egress lists the host[:port] destinations the sandbox may reach. Empty
	// means no network at all.
	Egress []string `json:"egress,omitempty"`
}

// Endpoint says how to reach a sandbox's toolboxd.
type Endpoint struct {
	Network string `json:"network"` // "unix" or "tcp"
	Address string `json:"address"` // socket path or host:port
}

// SandboxState is what the runtime last saw of a sandbox.
type SandboxState string

const (
	SandboxRunning SandboxState = "running"
	SandboxStopped SandboxState = "stopped"
	SandboxUnknown SandboxState = "unknown"
)

// Sandbox is a running (or recently running) isolated environment.
type Sandbox struct {
	ID        string            `json:"id"`
	Runtime   string            `json:"runtime"`
	Profile   Profile           `json:"profile"`
	Labels    map[string]string `json:"labels,omitempty"`
	State     SandboxState      `json:"state"`
	CreatedAt time.Time         `json:"created_at"`
	Endpoint  Endpoint          `json:"endpoint"`
	// Isolation names what stands between the sandbox's processes and the
	// host's kernel (IsolationGVisor, IsolationRunc, IsolationNone, or a
	// Kubernetes RuntimeClass's name); empty when the runtime cannot tell.
	Isolation string `json:"isolation,omitempty"`
	// Token authenticates calls to toolboxd; VNCPassword guards the desktop.
	// Both are random per sandbox and never serialized.
	Token       string `json:"-"`
	VNCPassword string `json:"-"`
}

// Isolations a sandbox runs under (Sandbox.Isolation).
const (
	// IsolationGVisor: gVisor's runsc, a kernel in user space between the
	// sandbox and the host's; the default wherever the engine offers it.
	IsolationGVisor = "gvisor"
	// IsolationRunc: namespaces, cgroups, seccomp and dropped capabilities
	// on the host's kernel (the engine's default OCI runtime).
	IsolationRunc = "runc"
	// IsolationNone: processes on the host as the server's user (the local
	// runtime, for development and tests).
	IsolationNone = "none"
)

// Labels every runtime puts on its sandboxes so that they can be found again
// after a restart and reaped.
const (
	LabelManaged = "drydock.managed" // "true"
	LabelJob     = "drydock.job"
	LabelServer  = "drydock.server" // the node id of the server that created it
)

// Runtime creates and destroys sandboxes. Docker/Podman and Kubernetes
// implement it; all pass runtime/runtimetest.
type Runtime interface {
	// Name is the backend's name ("docker", "kubernetes", "local").
	Name() string
	// Create starts a sandbox and returns once its toolboxd endpoint is known
	// (not necessarily ready; callers wait on toolboxd's health). On failure
	// nothing is left behind.
	Create(ctx context.Context, spec SandboxSpec) (*Sandbox, error)
	// Get returns a sandbox by id, with its endpoint and token; ENOTFOUND if gone.
	Get(ctx context.Context, id string) (*Sandbox, error)
	// List returns the sandboxes carrying all the given labels.
	List(ctx context.Context, labels map[string]string) ([]*Sandbox, error)
	// Destroy removes a sandbox and everything it owns. Destroying a sandbox
	// that does not exist is not an error.
	Destroy(ctx context.Context, id string) error
}

// Check fills the spec's default profile and validates what every runtime
// needs of it. Runtimes call it first in Create.
func (s *SandboxSpec) Check() error {
	if s.JobID == "" {
		return Errorf(EINVALID, "sandbox spec has no job id")
	}
	if s.Profile == "" {
		s.Profile = ProfileHeadless
	}
	if !s.Profile.Valid() {
		return Errorf(EINVALID, "unknown sandbox profile %q", s.Profile)
	}
	for _, e := range s.Egress {
		if strings.TrimSpace(e) == "" {
			return Errorf(EINVALID, "empty egress destination")
		}
	}
	return nil
}

// RuntimeLabels returns the spec's labels plus the ones every runtime puts
// on its sandboxes (managed, job, and the creating server's node id).
func (s SandboxSpec) RuntimeLabels(serverID string) map[string]string {
	labels := make(map[string]string, len(s.Labels)+3)
	maps.Copy(labels, s.Labels)
	labels[LabelManaged] = "true"
	labels[LabelJob] = s.JobID
	labels[LabelServer] = serverID
	return labels
}

// Or returns r with each zero field taken from the first of defaults that
// sets it.
func (r Resources) Or(defaults ...Resources) Resources {
	for _, d := range defaults {
		if r.CPUs <= 0 {
			r.CPUs = d.CPUs
		}
		if r.MemoryBytes <= 0 {
			r.MemoryBytes = d.MemoryBytes
		}
		if r.PidsLimit <= 0 {
			r.PidsLimit = d.PidsLimit
		}
		if r.WorkspaceBytes <= 0 {
			r.WorkspaceBytes = d.WorkspaceBytes
		}
		if r.TmpBytes <= 0 {
			r.TmpBytes = d.TmpBytes
		}
	}
	return r
}
