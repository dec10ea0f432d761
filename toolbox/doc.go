// Package toolbox holds the wire types of toolboxd, the daemon that runs
// inside every sandbox, and a Go client for its HTTP API. The server lives in
// package toolbox/server; the static binary in cmd/toolboxd.
//
// # The API
//
// Every route lives under /v1/ and, except GET /v1/health, needs the
// sandbox's token as "Authorization: Bearer <token>". Errors are JSON
// {"error": {"code", "message"}} with the codes of package drydock.
//
// Mutating requests (POST, PUT, DELETE) may carry an X-Request-Id header. The
// server remembers the first response to each id (in a bounded LRU) and answers
// a retry with the same id with that stored response instead of doing the work
// again, so a client may retry safely after a connection error. A retry that
// arrives while the first attempt still runs waits for it. Replays carry the
// header Idempotent-Replayed: true.
//
//	GET    /v1/health                      liveness; unauthenticated, reveals nothing
//	GET    /v1/ready                       readiness per component (503 until files and shell work)
//	GET    /v1/info                        API version, daemon version, profile, workspace
//	POST   /v1/claim                       ClaimRequest: hand a fresh sandbox to a job (new token and VNC password; once)
//	PUT    /v1/env                         EnvRequest -> EnvResult: the job's variables for every process started from now on
//	GET    /v1/files?path=&start_line=&end_line=   read a file (raw bytes), whole or a line range
//	PUT    /v1/files?path=&mode=           write a file (raw body), creating parent directories
//	DELETE /v1/files?path=&recursive=      delete a file or directory
//	GET    /v1/files/stat?path=            FileInfo (of the link itself for a symlink)
//	GET    /v1/files/list?path=&depth=     ListResult
//	POST   /v1/files/move                  MoveRequest
//	POST   /v1/files/mkdir                 MkdirRequest
//	PUT    /v1/files/tar?path=             unpack a tar (or tar.gz) stream into a directory
//	GET    /v1/files/tar?path=&exclude=    a directory (or file) as an uncompressed tar stream
//	POST   /v1/sessions                    SessionRequest -> Session (a persistent bash)
//	GET    /v1/sessions                    []Session
//	DELETE /v1/sessions/{id}               kill the shell and everything it started
//	POST   /v1/sessions/{id}/restart       a fresh shell under the same id
//	POST   /v1/sessions/{id}/run           RunRequest -> RunResult
//	POST   /v1/sessions/{id}/interrupt     Ctrl-C the running command -> RunResult
//	POST   /v1/exec                        ExecRequest -> a stream of ExecFrame (NDJSON)
//	POST   /v1/code/run                    CodeRequest -> CodeResult (501 without a code runner)
//	GET    /v1/desktop/screenshot          Screenshot (501 without a desktop)
//	POST   /v1/desktop/action              DesktopAction -> DesktopResult
//	GET    /v1/desktop/vnc                 RFB over WebSocket
//	POST   /v1/jupyter/start               {"base_url"} -> {"ready", "base_url"}: start (or move) Jupyter
//	*      /v1/jupyter/proxy/{path...}     Jupyter's /{path}, any method, WebSockets too
//
// # The job's environment
//
// PUT /v1/env gives every process toolboxd starts from then on (shell
// sessions, exec, the Python kernel, node) extra variables: a job's secrets.
// toolboxd keeps them in its memory only, never in a file or in its own
// environment, so neither `docker inspect` nor /proc/1/environ shows them
// (and toolboxd is not dumpable). A PUT replaces the variables of the last
// one; repeating it changes nothing. When they change, the Python kernel is
// restarted so that it has them (its variables are lost, which is why the
// runner sets them before the first tool call). Shells already running keep
// the environment they started with (replacing them would kill what runs in
// them); every shell started later (a new session, a restart, the shell
// after a hard timeout) has the new variables.
//
// # Jupyter
//
// POST /v1/jupyter/start starts the Jupyter server for people (with the
// classic notebook UI when the image has it) under base_url, the path prefix
// its pages are reached under through the orchestrator; asked for another
// base_url it restarts there. It answers once Jupyter answers, 503 with the
// reason (and Retry-After) while it starts or when it cannot, and is safe to
// repeat. /v1/jupyter/proxy/ forwards the rest of the path to Jupyter with
// the request's Host, Jupyter's own token in place of toolboxd's, and no
// request-id replay; the caller still needs toolboxd's token. Readiness
// lists jupyter_server once a start has been asked for.
//
// Every path is confined to the workspace: relative paths are taken from the
// workspace root, absolute paths must lie inside it, and neither ".." nor a
// symbolic link may lead out of it (the server resolves paths with os.Root).
//
// # Sessions
//
// A session is a bash whose cwd, variables, functions and background jobs
// persist from one command to the next. A run returns when the command
// ends, when it has printed nothing for the idle timeout (default 30s; the
// reply says Running and a run with no command waits again), or at the hard
// timeout (default 2m), where it gets Ctrl-C and, if it ignores that for a
// few seconds, its shell is killed (ShellExited; the next command gets a fresh
// shell). Ctrl-C abandons the rest of the command, as at a terminal, and
// leaves background jobs alone. Commands read stdin from /dev/null. Output
// (stdout and stderr interleaved) is capped in the reply (default 30000
// bytes, head and tail kept); beyond the cap the whole output is kept in the
// workspace under .drydock/outputs/, and the reply names the file.
//
// One call at a time waits on a session's command. A command sent while
// another runs is refused at once (409, naming the running command); a run
// with no command takes the wait over from any call already waiting (that
// call returns Running with no output), since the caller that started a
// command may be gone, e.g. an orchestrator that was killed.
//
// When the kernel's OOM killer ends processes in the sandbox, the next
// reply (of a session or of code) carries OutOfMemory: the kills, the
// memory limit and use, and the tmpfs mounts whose files count against it,
// with a message that says what to do. toolboxd reads the counter from the
// sandbox's memory cgroup (v1 or v2).
//
// # Versions
//
// APIVersion changes whenever the behaviour of the API changes, so a caller
// can tell what the daemon in an older sandbox image does:
//
//	1  first version: files, sessions, exec, health, code and desktop routes.
//	2  POST /v1/jupyter/start and /v1/jupyter/proxy/.
//	3  POST /v1/claim (warm sandboxes take a job's token and VNC password);
//	   the egress forwarder on 127.0.0.1:3128; a process start refused for
//	   lack of pids or memory is 503 (was 500); at most 8 file calls at once.
//	4  PUT /v1/env (the job's variables for the processes started from then
//	   on, kept in memory only).
//	5  no call waits silently on a busy session: a command sent while
//	   another runs is a 409 at once that names it, and a wait takes over
//	   from a wait already in progress (which returns Running, leaving the
//	   output to the new one); sessions list their running command; replies
//	   report OOM kills with the memory limit and the tmpfs mounts' usage
//	   (OutOfMemory of RunResult, CodeResult and exec's exit frame), how a
//	   shell ended (ShellEnd), and a shell lost between commands
//	   (FreshShell).
package toolbox

// APIVersion is the version of toolboxd's HTTP API; see the package doc for
// what each version changed.
const APIVersion = 5
