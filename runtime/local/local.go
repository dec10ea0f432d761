package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox/server"
	"github.com/drydockhq/drydock/unixsock"
)

var _ drydock.Runtime = (*Runtime)(nil)

// Files of a sandbox directory.
const (
	metaFile     = "sandbox.json"
	tokenFile    = "token"
	workspaceDir = "workspace"
	stateDir     = "state"
	socketName   = "toolbox.sock"
)

// maxSocketPath keeps socket paths under the kernel's limit (108 bytes on
// Linux, 104 on the BSDs) with room for the terminating NUL.
const maxSocketPath = 100

// idPattern is the shape of ids this runtime hands out; anything else is not
// ours, which also keeps ids from naming paths outside the root.
var idPattern = regexp.MustCompile(`^local-[0-9a-f]{16}$`)

// Options configures a Runtime.
type Options struct {
	// Root holds one directory per sandbox. Required.
	Root string
	// SocketDir, if set, holds the sockets instead of the sandbox
	// directories.
	SocketDir string
	// ServerID is the value of the drydock.server label on sandboxes this
	// runtime creates.
	ServerID string
	// Logger receives the runtime's and the toolbox servers' logs; nil
	// discards them.
	Logger *slog.Logger
}

// Runtime runs toolbox servers in this process over host directories.
type Runtime struct {
	root      string
	socketDir string
	opts      Options
	log       *slog.Logger
	base      *slog.Logger // for the toolbox servers

	mu     sync.Mutex
	served map[string]*instance
}

// instance is one sandbox's toolbox server in this process.
type instance struct {
	srv  *server.Server
	hs   *http.Server
	sock string
}

// meta is what sandbox.json holds.
type meta struct {
	ID        string            `json:"id"`
	JobID     string            `json:"job_id"`
	Profile   drydock.Profile   `json:"profile"`
	Labels    map[string]string `json:"labels"`
	Env       map[string]string `json:"env,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
}

// New returns a runtime over opts.Root, creating it if needed.
func New(opts Options) (*Runtime, error) {
	if opts.Root == "" {
		return nil, errors.New("local runtime: no root directory")
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("local runtime root: %w", err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("local runtime root: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runtime{root: root, opts: opts, log: log.With("component", "runtime.local"), base: log, served: map[string]*instance{}}
	switch {
	case opts.SocketDir != "":
		r.socketDir, err = filepath.Abs(opts.SocketDir)
		if err != nil {
			return nil, fmt.Errorf("local runtime socket dir: %w", err)
		}
	case len(filepath.Join(root, "local-0123456789abcdef", socketName)) > maxSocketPath:
		h := sha256.Sum256([]byte(root))
		r.socketDir = filepath.Join(os.TempDir(), "drydock-local-"+hex.EncodeToString(h[:6]))
		r.log.Info("root is too deep for unix socket paths; sockets go to a short directory", "root", root, "socket_dir", r.socketDir)
	}
	return r, nil
}

// Name implements drydock.Runtime.
func (r *Runtime) Name() string { return "local" }

// Close stops serving every sandbox, as a process exit would, and leaves
// their directories for a later Runtime to serve again.
func (r *Runtime) Close() error {
	r.mu.Lock()
	all := r.served
	r.served = map[string]*instance{}
	r.mu.Unlock()
	for _, inst := range all {
		inst.stop()
	}
	return nil
}

// Workspace returns the host directory of a sandbox's workspace.
func (r *Runtime) Workspace(id string) string {
	return filepath.Join(r.root, id, workspaceDir)
}

func (r *Runtime) socketPath(id string) string {
	if r.socketDir != "" {
		return filepath.Join(r.socketDir, id+".sock")
	}
	return filepath.Join(r.root, id, socketName)
}

// Create implements drydock.Runtime.
func (r *Runtime) Create(ctx context.Context, spec drydock.SandboxSpec) (*drydock.Sandbox, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	labels := spec.RuntimeLabels(r.opts.ServerID)
	m := meta{
		ID:        "local-" + drydock.RandomHex(8),
		JobID:     spec.JobID,
		Profile:   spec.Profile,
		Labels:    labels,
		Env:       spec.Env,
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
	}
	token := drydock.NewSandboxToken()
	sb, err := r.create(m, token)
	if err != nil {
		r.remove(m.ID)
		return nil, fmt.Errorf("create sandbox %s: %w", m.ID, err)
	}
	r.log.Info("sandbox created", "sandbox", m.ID, "job", spec.JobID, "profile", spec.Profile, "workspace", r.Workspace(m.ID))
	return sb, nil
}

func (r *Runtime) create(m meta, token string) (*drydock.Sandbox, error) {
	dir := filepath.Join(r.root, m.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(dir, workspaceDir), 0o755); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(dir, tokenFile), []byte(token+"\n")); err != nil {
		return nil, err
	}
	// The metadata goes last: a directory without it is an unfinished
	// create, which Get and List ignore.
	if err := r.writeMeta(dir, m); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	inst, err := r.serve(m, token)
	if err != nil {
		return nil, err
	}
	r.served[m.ID] = inst
	return r.sandbox(m, token, drydock.SandboxRunning), nil
}

// serve starts a toolbox server for the sandbox. Callers hold r.mu.
func (r *Runtime) serve(m meta, token string) (*instance, error) {
	sock := r.socketPath(m.ID)
	if err := ownDir(filepath.Dir(sock)); err != nil {
		return nil, err
	}
	// A socket nobody answers on was left by a process that died; unixsock
	// removes only a socket and follows no link.
	ln, err := unixsock.Listen(sock, 0o600)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	dir := filepath.Join(r.root, m.ID)
	srv := server.New(server.Config{
		Workspace: filepath.Join(dir, workspaceDir),
		Token:     token,
		Profile:   m.Profile,
		Version:   "local",
		Env:       m.Env,
		StateDir:  filepath.Join(dir, stateDir),
	}, r.base.With("component", "toolboxd", "sandbox", m.ID))
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return &instance{srv: srv, hs: hs, sock: sock}, nil
}

// ownDir makes dir (0700) if needed and checks that it is a directory of
// this user's that no one else can write, not a link: the short socket
// directory sits in the shared temporary directory under a name anyone can
// compute, and another user who made it first could otherwise swap the
// sockets in it for their own and read the tokens this process sends.
func ownDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("socket directory %s is not a directory (%v): remove it or set another socket directory", dir, fi.Mode().Type())
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("socket directory %s belongs to uid %d, not this user (%d): remove it or set another socket directory", dir, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("socket directory %s is writable by others (%v): remove it or set another socket directory", dir, fi.Mode().Perm())
	}
	return nil
}

// stop closes the listener and connections, then kills the shells, which
// ends the requests still waiting on them.
func (inst *instance) stop() {
	inst.hs.Close()
	inst.srv.Close()
	os.Remove(inst.sock)
}

// Get implements drydock.Runtime. A sandbox that exists on disk but that
// nothing serves (the process that served it exited) is served again.
func (r *Runtime) Get(ctx context.Context, id string) (*drydock.Sandbox, error) {
	if !idPattern.MatchString(id) {
		return nil, drydock.Errorf(drydock.ENOTFOUND, "no sandbox %q", id)
	}
	m, token, err := r.load(id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		// Destroyed, perhaps by another Runtime: stop serving it here too.
		if inst := r.served[id]; inst != nil {
			delete(r.served, id)
			inst.stop()
		}
		return nil, err
	}
	if r.served[id] == nil && !answers(r.socketPath(id)) {
		inst, err := r.serve(m, token)
		if err != nil {
			return nil, fmt.Errorf("serve sandbox %s: %w", id, err)
		}
		r.served[id] = inst
		r.log.Info("sandbox served again", "sandbox", id)
	}
	return r.sandbox(m, token, drydock.SandboxRunning), nil
}

// List implements drydock.Runtime. It serves nothing: a sandbox whose socket
// does not answer is listed as stopped until Get serves it.
func (r *Runtime) List(ctx context.Context, labels map[string]string) ([]*drydock.Sandbox, error) {
	ents, err := os.ReadDir(r.root)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	var out []*drydock.Sandbox
	for _, e := range ents {
		if !e.IsDir() || !idPattern.MatchString(e.Name()) {
			continue
		}
		m, token, err := r.load(e.Name())
		if err != nil {
			continue // being created or destroyed
		}
		if !hasLabels(m.Labels, labels) {
			continue
		}
		r.mu.Lock()
		served := r.served[m.ID] != nil
		r.mu.Unlock()
		state := drydock.SandboxStopped
		if served || answers(r.socketPath(m.ID)) {
			state = drydock.SandboxRunning
		}
		out = append(out, r.sandbox(m, token, state))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Destroy implements drydock.Runtime: it stops serving the sandbox, kills its
// shells and removes its directory and socket.
func (r *Runtime) Destroy(ctx context.Context, id string) error {
	if !idPattern.MatchString(id) {
		return nil
	}
	r.mu.Lock()
	inst := r.served[id]
	delete(r.served, id)
	r.mu.Unlock()
	if inst != nil {
		inst.stop()
	}
	if err := r.remove(id); err != nil {
		return fmt.Errorf("destroy sandbox %s: %w", id, err)
	}
	r.log.Info("sandbox destroyed", "sandbox", id)
	return nil
}

func (r *Runtime) remove(id string) error {
	os.Remove(r.socketPath(id))
	return forceRemoveAll(filepath.Join(r.root, id))
}

// forceRemoveAll removes a tree even where the agent made directories
// read-only.
func forceRemoveAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

func (r *Runtime) load(id string) (meta, string, error) {
	dir := filepath.Join(r.root, id)
	var m meta
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return m, "", drydock.Errorf(drydock.ENOTFOUND, "no sandbox %q", id)
	}
	if err != nil {
		return m, "", fmt.Errorf("read sandbox %s: %w", id, err)
	}
	if err := json.Unmarshal(b, &m); err != nil || m.ID != id {
		return m, "", fmt.Errorf("sandbox %s: corrupt %s", id, metaFile)
	}
	tok, err := os.ReadFile(filepath.Join(dir, tokenFile))
	if errors.Is(err, fs.ErrNotExist) {
		return m, "", drydock.Errorf(drydock.ENOTFOUND, "no sandbox %q", id)
	}
	if err != nil {
		return m, "", fmt.Errorf("read sandbox %s token: %w", id, err)
	}
	return m, string(trimNewline(tok)), nil
}

func (r *Runtime) sandbox(m meta, token string, state drydock.SandboxState) *drydock.Sandbox {
	return &drydock.Sandbox{
		ID:        m.ID,
		Runtime:   r.Name(),
		Profile:   m.Profile,
		Labels:    maps.Clone(m.Labels),
		State:     state,
		CreatedAt: m.CreatedAt,
		Endpoint:  drydock.Endpoint{Network: "unix", Address: r.socketPath(m.ID)},
		Isolation: drydock.IsolationNone,
		Token:     token,
	}
}

// answers reports whether something accepts connections on the socket.
func answers(sock string) bool {
	c, err := unixsock.DialWith(context.Background(), &net.Dialer{Timeout: time.Second}, sock)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func (r *Runtime) writeMeta(dir string, m meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, metaFile), b)
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
