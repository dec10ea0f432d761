package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

var _ drydock.Runtime = (*Runtime)(nil)

// Labels this runtime adds to the ones every runtime sets.
const (
	labelProfile = "drydock.profile"
	// labelIsolation records what the sandbox runs under, for a server
	// that finds it again after a restart.
	labelIsolation = "drydock.isolation"
	labelStateDir  = "drydock.state-dir"
)

// Paths inside the sandbox.
const (
	toolboxDir    = "/run/toolbox"
	toolboxSocket = "toolboxd.sock"
	workspaceDir  = "/workspace"
	homeDir       = "/home/agent"
	sandboxUser   = "1000:1000"
)

// The environment toolboxd reads. TOOLBOXD_LISTEN is a URL
// (unix:///path or tcp://host:port).
const (
	EnvListen      = "TOOLBOXD_LISTEN"
	EnvSecretsFile = "TOOLBOXD_SECRETS_FILE"
	EnvProfile     = "TOOLBOXD_PROFILE"
	EnvWorkspace   = "TOOLBOXD_WORKSPACE"
	// EnvMemoryLimit asks toolboxd to enforce the sandbox's memory limit
	// itself (gVisor; see gvisorLimits).
	EnvMemoryLimit = "TOOLBOXD_MEMORY_LIMIT"
)

// DefaultResources are the limits of a sandbox whose spec leaves them zero.
var DefaultResources = drydock.Resources{
	CPUs:           2,
	MemoryBytes:    4 << 30,
	PidsLimit:      1024,
	WorkspaceBytes: 2 << 30,
	TmpBytes:       1 << 30,
}

// shmBytes is /dev/shm's size, the engines' default.
const shmBytes = 64 << 20

// homeBytes bounds /home/agent: dotfiles, caches and Jupyter's runtime
// files, not work.
const homeBytes = 256 << 20

// idPattern is the shape of the ids this runtime hands out. Anything else is
// not ours, which also keeps ids from naming paths outside StateDir.
var idPattern = regexp.MustCompile(`^drydock-[0-9a-f]{16}$`)

// Options configures a Runtime.
type Options struct {
	// Host is the engine's address (unix:///var/run/docker.sock, Podman's
	// socket, tcp://...); empty means DOCKER_HOST or the default socket. The
	// engine must run on this host: toolboxd's socket directory is a bind
	// mount of a local path.
	Host string
	// ServerID is the value of the drydock.server label on sandboxes this
	// runtime creates.
	ServerID string
	// StateDir holds one directory per sandbox (toolboxd's socket and the
	// secrets file). Empty means /run/drydock/sandboxes for root and
	// $XDG_RUNTIME_DIR/drydock/sandboxes (or a per-user temp dir) otherwise.
	StateDir string
	// Images maps a profile to the image used when a spec names none.
	// Missing profiles use drydock-sandbox:<profile>.
	Images map[drydock.Profile]string
	// Defaults overrides DefaultResources field by field.
	Defaults drydock.Resources
	// OCIRuntime selects the engine's container runtime (runsc for gVisor,
	// kata-runtime, ...); empty means the engine's default. Podman's compat
	// API ignores it, so with Podman Create refuses it: configure the runtime
	// in containers.conf there.
	OCIRuntime string
	// PodmanSeccompProfile is Podman's default seccomp profile, from which
	// the runtime derives the sandboxes' (seccomp.go); empty means
	// /usr/share/containers/seccomp.json.
	PodmanSeccompProfile string
	// NoInit runs toolboxd as PID 1 instead of the engine's init
	// (docker-init; catatonit or the init_path of containers.conf for
	// Podman). Without an init, orphaned processes are never reaped, and a
	// fork bomb's zombies keep the pids limit exhausted for good.
	NoInit bool
	// Logger receives one line per create and destroy; nil discards.
	Logger *slog.Logger
}

// Runtime is a drydock.Runtime on a Docker-compatible engine.
type Runtime struct {
	cli      *client.Client
	opts     Options
	stateDir string
	log      *slog.Logger

	mu     sync.Mutex
	engine string // "docker" or "podman" once known
	// isolation is what new sandboxes run under (ResolveIsolation).
	isolation string
	// seccomp is the profile derived for Podman (seccomp.go).
	seccomp seccompProfile

	// beforeStart, when set by a test, runs between create and start, to
	// fail a Create after the container exists.
	beforeStart func(id string) error
}

// New connects to the engine. It does not contact it: the first call does,
// negotiating the API version.
func New(opts Options) (*Runtime, error) {
	clientOpts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if opts.Host != "" {
		clientOpts = append(clientOpts, client.WithHost(opts.Host))
	}
	cli, err := client.New(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("docker client for %q: %w", opts.Host, err)
	}
	stateDir := opts.StateDir
	if stateDir == "" {
		stateDir = defaultStateDir()
	}
	stateDir, err = filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	isolation := drydock.IsolationRunc
	if opts.OCIRuntime == gvisorRuntime {
		isolation = drydock.IsolationGVisor
	}
	return &Runtime{cli: cli, opts: opts, stateDir: stateDir, log: log.With("component", "runtime.docker"), isolation: isolation}, nil
}

func defaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/run/drydock/sandboxes"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "drydock", "sandboxes")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("drydock-%d", os.Geteuid()), "sandboxes")
}

// Close releases the client's connections.
func (r *Runtime) Close() error { return r.cli.Close() }

// Client returns the engine client, for callers that need what the Runtime
// interface does not offer (tests exec into sandboxes with it).
func (r *Runtime) Client() *client.Client { return r.cli }

// Name implements drydock.Runtime.
func (r *Runtime) Name() string { return "docker" }

// secrets is what the 0600 file beside the socket directory holds.
type secrets struct {
	Token       string `json:"token"`
	VNCPassword string `json:"vnc_password"`
	// Job is the job that claimed a warm sandbox (see Claim).
	Job string `json:"job,omitempty"`
}

// Create implements drydock.Runtime.
func (r *Runtime) Create(ctx context.Context, spec drydock.SandboxSpec) (*drydock.Sandbox, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	img := spec.Image
	if img == "" {
		img = r.opts.Images[spec.Profile]
	}
	if img == "" {
		img = "drydock-sandbox:" + string(spec.Profile)
	}
	res := r.resources(spec.Resources)
	if err := validResources(res); err != nil {
		return nil, err
	}

	id := "drydock-" + drydock.RandomHex(8)
	dir := filepath.Join(r.stateDir, id)
	sec := secrets{Token: drydock.NewSandboxToken(), VNCPassword: drydock.NewVNCPassword()}
	if err := r.makeStateDir(dir, sec); err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	sb, err := r.createContainer(ctx, id, dir, img, spec, res, sec)
	if err != nil {
		// Nothing may be left behind: a context cancelled mid-create must
		// not keep the cleanup from running.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, rerr := r.cli.ContainerRemove(cctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil && !cerrdefs.IsNotFound(rerr) {
			r.log.Warn("remove container of failed create", "sandbox", id, "err", rerr)
		}
		if rerr := os.RemoveAll(dir); rerr != nil {
			r.log.Warn("remove state dir of failed create", "sandbox", id, "err", rerr)
		}
		return nil, err
	}
	r.log.Info("sandbox created", "sandbox", id, "job", spec.JobID, "image", img, "profile", spec.Profile)
	return sb, nil
}

func (r *Runtime) createContainer(ctx context.Context, id, dir, img string, spec drydock.SandboxSpec, res drydock.Resources, sec secrets) (*drydock.Sandbox, error) {
	labels := spec.RuntimeLabels(r.opts.ServerID)
	labels[labelProfile] = string(spec.Profile)
	r.mu.Lock()
	ociRuntime, isolation := r.opts.OCIRuntime, r.isolation
	r.mu.Unlock()
	labels[labelIsolation] = isolation
	labels[labelStateDir] = dir

	env := maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[EnvListen] = "unix://" + toolboxDir + "/" + toolboxSocket
	// The secrets go in a file toolboxd reads and removes at start, never in
	// the environment, which PID 1 keeps readable to the sandbox's processes
	// and `docker inspect` shows.
	env[EnvSecretsFile] = toolboxDir + "/" + bootSecretsFile
	env[EnvProfile] = string(spec.Profile)
	env[EnvWorkspace] = workspaceDir
	egressEnv(env)
	limits := hostLimits{memory: res.MemoryBytes, pids: res.PidsLimit}
	if isolation == drydock.IsolationGVisor {
		limits = gvisorLimits(res)
		env[EnvMemoryLimit] = strconv.FormatInt(res.MemoryBytes, 10)
	}
	var envList []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}

	// No network, whatever the spec's egress: the engine cannot filter by
	// destination, so the sandbox reaches out only through the egress
	// proxy's socket (see egress.go), which enforces the job's list.
	network := container.NetworkMode("none")
	podman, err := r.isPodman(ctx)
	if err != nil {
		return nil, err
	}
	if podman && ociRuntime != "" {
		// Podman 4's compat API accepts HostConfig.Runtime and ignores it;
		// running a sandbox with weaker isolation than asked is worse than
		// not running it.
		return nil, drydock.Errorf(drydock.EINVALID, "Podman's Docker-compatible API ignores the OCI runtime %q; set [engine] runtime in containers.conf instead", ociRuntime)
	}
	securityOpt := []string{"no-new-privileges"}
	if podman {
		profile, err := r.podmanSeccomp(dir)
		if err != nil {
			return nil, fmt.Errorf("create sandbox %s: %w", id, err)
		}
		securityOpt = append(securityOpt, "seccomp="+profile)
	}
	wsBytes, tmpBytes, homeSize := tmpfsSizes(res)
	if wsBytes < res.WorkspaceBytes || tmpBytes < res.TmpBytes {
		r.log.Info("tmpfs mounts sized below the memory limit", "sandbox", id, "memory", res.MemoryBytes,
			"workspace", wsBytes, "workspace_asked", res.WorkspaceBytes, "tmp", tmpBytes, "tmp_asked", res.TmpBytes, "home", homeSize)
	}
	hc := &container.HostConfig{
		NetworkMode:    network,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    securityOpt,
		ReadonlyRootfs: true,
		Runtime:        ociRuntime,
		Tmpfs: map[string]string{
			workspaceDir: tmpfsOpts(podman, wsBytes, "0755", true),
			homeDir:      tmpfsOpts(podman, homeSize, "0755", true),
			"/tmp":       tmpfsOpts(podman, tmpBytes, "1777", false),
			// The engines' own /dev/shm, made explicit: Podman binds in a
			// tmpfs it keeps on the host, which gVisor serves through its
			// gofer as a host file system; a mount of the container's
			// own is memory in gVisor's kernel, as under runc.
			"/dev/shm": "rw,nosuid,nodev,noexec,size=" + strconv.Itoa(shmBytes) + ",mode=1777",
		},
		Mounts: []mount.Mount{{Type: mount.TypeBind, Source: socketDir(dir), Target: toolboxDir}},
		Resources: container.Resources{
			Memory:     limits.memory,
			MemorySwap: limits.memory, // no swap: the limit is the limit
			NanoCPUs:   int64(res.CPUs * 1e9),
			PidsLimit:  &limits.pids,
		},
	}
	if limits.nproc > 0 {
		hc.Ulimits = []*container.Ulimit{{Name: "nproc", Soft: limits.nproc, Hard: limits.nproc}}
	}
	initProcess := !r.opts.NoInit
	hc.Init = &initProcess
	cfg := &container.Config{
		Image:      img,
		Hostname:   "sandbox",
		User:       sandboxUser,
		WorkingDir: workspaceDir,
		Env:        envList,
		Labels:     labels,
	}
	if _, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: id, Config: cfg, HostConfig: hc}); err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, drydock.Errorf(drydock.EINVALID, "sandbox image %s not found (build it with drydock image build)", img)
		}
		return nil, engineError(fmt.Sprintf("create sandbox %s", id), err)
	}
	if r.beforeStart != nil {
		if err := r.beforeStart(id); err != nil {
			return nil, err
		}
	}
	if _, err := r.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return nil, engineError(fmt.Sprintf("start sandbox %s", id), err)
	}
	if err := r.sealSocketDir(ctx, id, dir); err != nil {
		return nil, fmt.Errorf("start sandbox %s: %w", id, err)
	}
	return &drydock.Sandbox{
		ID:          id,
		Runtime:     r.Name(),
		Profile:     spec.Profile,
		Labels:      labels,
		State:       drydock.SandboxRunning,
		CreatedAt:   time.Now().UTC(),
		Endpoint:    endpoint(dir),
		Isolation:   isolation,
		Token:       sec.Token,
		VNCPassword: sec.VNCPassword,
	}, nil
}

// tmpfsSizes keeps what the sandbox's files can hold below its memory
// limit. tmpfs pages are charged to the container's memory cgroup and,
// without swap, cannot be reclaimed: mounts that together could hold the
// whole limit let a filled workspace bring the OOM killer down on every
// process, each new one included (a 2 GiB workspace under a 2 GiB limit
// killed the agent's shell again and again, and rm could not start). The
// mounts get the limit minus a reserve for processes (a quarter of it, 256
// MiB to 1 GiB, at most half): home at most an eighth of that; when the
// asked sizes do not fit the rest, /tmp at most a quarter of it and the
// workspace what remains, up to the size asked. A full workspace then says
// ENOSPC, and processes still have the reserve.
func tmpfsSizes(res drydock.Resources) (workspace, tmp, home int64) {
	reserve := min(max(res.MemoryBytes/4, 256<<20), 1<<30, res.MemoryBytes/2)
	budget := res.MemoryBytes - reserve
	home = min(homeBytes, budget/8)
	rest := budget - home
	workspace, tmp = res.WorkspaceBytes, res.TmpBytes
	if workspace+tmp > rest {
		tmp = min(tmp, rest/4)
		workspace = min(workspace, rest-tmp)
	}
	return max(workspace, 1<<20), max(tmp, 1<<20), max(home, 1<<20)
}

// tmpfsOpts: the sandbox's own tmpfs mounts. exec is explicit because the
// engines default to noexec, and agents build and run programs in their
// workspace and home. Docker passes uid= and gid= to the kernel; Podman
// refuses them and has its own U (chown to the container's user).
func tmpfsOpts(podman bool, size int64, mode string, owned bool) string {
	o := []string{"rw", "nosuid", "nodev", "exec", "size=" + strconv.FormatInt(size, 10), "mode=" + mode}
	if owned && podman {
		o = append(o, "U")
	} else if owned {
		o = append(o, "uid=1000", "gid=1000")
	}
	return strings.Join(o, ",")
}

// isPodman asks the engine once what it is. Podman names itself in the
// version's components; Docker never does.
func (r *Runtime) isPodman(ctx context.Context) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.engine == "" {
		v, err := r.cli.ServerVersion(ctx, client.ServerVersionOptions{})
		if err != nil {
			return false, engineError("engine version", err)
		}
		r.engine = "docker"
		for _, c := range v.Components {
			if strings.HasPrefix(c.Name, "Podman") {
				r.engine = "podman"
			}
		}
	}
	return r.engine == "podman", nil
}

func (r *Runtime) resources(spec drydock.Resources) drydock.Resources {
	return spec.Or(r.opts.Defaults, DefaultResources)
}

func validResources(r drydock.Resources) error {
	switch {
	case r.CPUs < 0.01:
		return drydock.Errorf(drydock.EINVALID, "cpus %.3g is below the minimum of 0.01", r.CPUs)
	case r.MemoryBytes < 32<<20:
		return drydock.Errorf(drydock.EINVALID, "memory %d bytes is below the minimum of 32 MiB", r.MemoryBytes)
	case r.PidsLimit < 16:
		return drydock.Errorf(drydock.EINVALID, "pids limit %d is below the minimum of 16", r.PidsLimit)
	case r.WorkspaceBytes < 1<<20 || r.TmpBytes < 1<<20:
		return drydock.Errorf(drydock.EINVALID, "workspace and tmp must be at least 1 MiB")
	}
	return nil
}

// makeStateDir creates StateDir/<id> (0700) holding the secrets file (0600)
// and the socket directory toolbox/ (0777, see the package doc).
func (r *Runtime) makeStateDir(dir string, sec secrets) error {
	if err := os.MkdirAll(r.stateDir, 0o700); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("create sandbox dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, engineFile), []byte(r.cli.DaemonHost()), 0o600); err != nil {
		return fmt.Errorf("write engine file: %w", err)
	}
	sock := socketDir(dir)
	if err := os.Mkdir(sock, 0o777); err != nil {
		return fmt.Errorf("create socket dir: %w", err)
	}
	// Mkdir's mode is filtered by the umask.
	if err := os.Chmod(sock, 0o777); err != nil {
		return fmt.Errorf("chmod socket dir: %w", err)
	}
	if err := writeBootSecrets(sock, sec); err != nil {
		return err
	}
	return writeSecrets(dir, sec)
}

// bootSecretsFile is the file in the socket directory that hands toolboxd its
// token and VNC password; toolboxd removes it as it starts.
const bootSecretsFile = "boot-secrets.json"

// writeBootSecrets writes the file for the sandbox's user only. Where the
// orchestrator may not chown (a rootless engine maps uids anyway) it stays
// readable to all, which the 0700 state directory around it still keeps from
// the host's other users. The directory is new and no container runs yet,
// but the file is still created exclusively and changed only through its
// descriptor: nothing at that name is followed.
func writeBootSecrets(sock string, sec secrets) error {
	data, err := json.Marshal(toolbox.BootSecrets{Token: sec.Token, VNCPassword: sec.VNCPassword})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(sock, bootSecretsFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("write boot secrets: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write boot secrets: %w", err)
	}
	if err := f.Chown(1000, 1000); err != nil {
		if err := f.Chmod(0o644); err != nil {
			return fmt.Errorf("chmod boot secrets: %w", err)
		}
	}
	return f.Close()
}

func endpoint(dir string) drydock.Endpoint {
	return drydock.Endpoint{Network: "unix", Address: filepath.Join(socketDir(dir), toolboxSocket)}
}

// Get implements drydock.Runtime.
func (r *Runtime) Get(ctx context.Context, id string) (*drydock.Sandbox, error) {
	if !idPattern.MatchString(id) {
		return nil, drydock.Errorf(drydock.ENOTFOUND, "sandbox %q not found", id)
	}
	res, err := r.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, drydock.Errorf(drydock.ENOTFOUND, "sandbox %s not found", id)
		}
		return nil, engineError(fmt.Sprintf("inspect sandbox %s", id), err)
	}
	c := res.Container
	if c.Config == nil || c.Config.Labels[drydock.LabelManaged] != "true" || c.State == nil {
		return nil, drydock.Errorf(drydock.ENOTFOUND, "sandbox %s not found", id)
	}
	created, _ := time.Parse(time.RFC3339Nano, c.Created)
	return r.sandbox(id, c.Config.Labels, string(c.State.Status), created), nil
}

// List implements drydock.Runtime.
func (r *Runtime) List(ctx context.Context, labels map[string]string) ([]*drydock.Sandbox, error) {
	f := make(client.Filters).Add("label", drydock.LabelManaged+"=true")
	for k, v := range labels {
		// A claimed sandbox's job is in its secrets file, not its labels.
		if k != drydock.LabelJob {
			f.Add("label", k+"="+v)
		}
	}
	res, err := r.listContainers(ctx, f)
	if err != nil {
		return nil, engineError("list sandboxes", err)
	}
	var out []*drydock.Sandbox
	for _, c := range res.Items {
		id := containerName(c.Names)
		// The engine filters by label already; checking again costs
		// nothing and guards against an engine that ignores a filter.
		if !idPattern.MatchString(id) || c.Labels[drydock.LabelManaged] != "true" {
			continue
		}
		sb := r.sandbox(id, c.Labels, string(c.State), time.Unix(c.Created, 0))
		if !hasLabels(sb.Labels, labels) {
			continue
		}
		out = append(out, sb)
	}
	slices.SortFunc(out, func(a, b *drydock.Sandbox) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// listAttempts and listBackoff bound the retries of a failed list: a few
// tenths of a second in all.
const (
	listAttempts = 4
	listBackoff  = 50 * time.Millisecond
)

// listContainers lists containers, retrying a failed answer. Podman 4.3
// fails the whole list ("getting container from store ...: container not
// known") when another container disappears while it lists, which happens
// whenever a sandbox is destroyed meanwhile; the reaper, recovery and the
// pool all depend on the list. Each retry waits twice as long as the last.
func (r *Runtime) listContainers(ctx context.Context, f client.Filters) (client.ContainerListResult, error) {
	wait := listBackoff
	for attempt := 1; ; attempt++ {
		res, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		if err == nil || attempt == listAttempts || ctx.Err() != nil {
			return res, err
		}
		r.log.Debug("list failed; retrying", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func containerName(names []string) string {
	for _, n := range names {
		if n = strings.TrimPrefix(n, "/"); idPattern.MatchString(n) {
			return n
		}
	}
	return ""
}

// sandbox builds the domain view of a container; the token comes from the
// secrets file, so it survives an orchestrator restart but not a host reboot
// (StateDir is on /run), after which the sandbox is stopped anyway.
func (r *Runtime) sandbox(id string, labels map[string]string, state string, created time.Time) *drydock.Sandbox {
	dir := r.sandboxDir(id, labels)
	sb := &drydock.Sandbox{
		ID:        id,
		Runtime:   r.Name(),
		Profile:   drydock.Profile(labels[labelProfile]),
		Isolation: labels[labelIsolation],
		Labels:    maps.Clone(labels),
		State:     sandboxState(state),
		CreatedAt: created.UTC(),
		Endpoint:  endpoint(dir),
	}
	data, err := os.ReadFile(filepath.Join(dir, "secrets.json"))
	if err != nil {
		r.log.Warn("sandbox secrets unreadable", "sandbox", id, "err", err)
		return sb
	}
	var sec secrets
	if err := json.Unmarshal(data, &sec); err != nil {
		r.log.Warn("sandbox secrets corrupt", "sandbox", id, "err", err)
		return sb
	}
	sb.Token, sb.VNCPassword = sec.Token, sec.VNCPassword
	if sec.Job != "" {
		sb.Labels[drydock.LabelJob] = sec.Job
	}
	return sb
}

// sandboxDir trusts the state-dir label only when it names this sandbox's
// own directory, so that a label cannot point Destroy at another path.
func (r *Runtime) sandboxDir(id string, labels map[string]string) string {
	if d := labels[labelStateDir]; d != "" && filepath.IsAbs(d) && filepath.Base(d) == id && filepath.Clean(d) == d {
		return d
	}
	return filepath.Join(r.stateDir, id)
}

func sandboxState(s string) drydock.SandboxState {
	switch s {
	case "running":
		return drydock.SandboxRunning
	case "created", "exited", "dead", "stopped", "configured", "removing":
		return drydock.SandboxStopped
	}
	return drydock.SandboxUnknown
}

// Destroy implements drydock.Runtime.
func (r *Runtime) Destroy(ctx context.Context, id string) error {
	if !idPattern.MatchString(id) {
		return nil
	}
	dir := filepath.Join(r.stateDir, id)
	if res, err := r.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil && res.Container.Config != nil {
		if res.Container.Config.Labels[drydock.LabelManaged] != "true" {
			return nil
		}
		dir = r.sandboxDir(id, res.Container.Config.Labels)
	} else if err != nil && !cerrdefs.IsNotFound(err) {
		return engineError(fmt.Sprintf("inspect sandbox %s", id), err)
	}
	if err := r.removeContainer(ctx, id); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("destroy sandbox %s: remove state dir: %w", id, err)
	}
	r.log.Info("sandbox destroyed", "sandbox", id)
	return nil
}

// removeContainer removes the container and its anonymous volumes. A
// concurrent removal of the same container is success once it is gone.
func (r *Runtime) removeContainer(ctx context.Context, id string) error {
	for attempt := 0; ; attempt++ {
		_, err := r.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		if !cerrdefs.IsConflict(err) || attempt >= 50 {
			return engineError(fmt.Sprintf("destroy sandbox %s", id), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// engineError marks failures to reach the engine as retryable; anything
// else keeps its detail for the logs only.
func engineError(op string, err error) error {
	if client.IsErrConnectionFailed(err) || cerrdefs.IsUnavailable(err) {
		return fmt.Errorf("%s: %w: %w", op, drydock.Errorf(drydock.EUNAVAILABLE, "container engine unavailable"), err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// vncPassword is 8 characters because classic VNC authentication uses only
// the first eight; the alphabet leaves out look-alike characters for people
// who type it.
