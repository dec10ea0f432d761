package runner

import (
	"bytes"
	"context"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// quiesceScript stops and kills every process of the sandbox but toolboxd
// (its parent) and PID 1, round after round until a round finds none
// left, using only the shell's builtins so that it starts no process of
// its own while it runs. It refuses unless PID 1 is toolboxd, an engine's
// init, or the pause container of a Kubernetes pod that shares one process
// namespace: anywhere else the processes might not be the sandbox's.
const quiesceScript = `set -u
init=
read -r init </proc/1/comm || true
case $init in
toolboxd | docker-init | podman-init | tini | catatonit | pause) ;;
*) echo "the sandbox's first process is ${init:-unknown}, not toolboxd or an init it knows" >&2; exit 3 ;;
esac
rounds=0
while :; do
	n=0
	for d in /proc/[0-9]*; do
		pid=${d#/proc/}
		case $pid in 1 | "$$" | "$PPID") continue ;; esac
		st=
		read -r st <"$d/stat" 2>/dev/null || continue
		case ${st##*") "} in Z* | X*) continue ;; esac
		if kill -STOP "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null
			n=$((n + 1))
		fi
	done
	[ "$n" -eq 0 ] && break
	rounds=$((rounds + 1))
	[ "$rounds" -lt 200 ] || { echo "processes kept starting while they were being ended" >&2; exit 4; }
done`

// quiesce ends what the agent left running in a finished job's sandbox,
// before the steps that must not share it with the agent's processes: the
// push (which holds the repository's token in git's environment, readable
// in /proc by the same user) and the final diff (whose starting point a
// running process could rewrite while it is checked). A sandbox of the
// local runtime is the host's process table, and is left alone.
func (r *Runner) quiesce(ctx context.Context, sb *drydock.Sandbox) error {
	if sb == nil || sb.Isolation == drydock.IsolationNone {
		return nil
	}
	var stderr bytes.Buffer
	res, err := r.deps.Toolbox(sb).Exec(ctx, toolbox.ExecRequest{
		Args:    []string{"/bin/sh", "-c", quiesceScript},
		Timeout: drydock.Duration(time.Minute),
	}, &bytes.Buffer{}, &limitedBuffer{buf: &stderr, max: 4 << 10})
	switch {
	case err != nil:
		return drydock.Errorf(drydock.EUNAVAILABLE, "ending the agent's processes in the sandbox failed: %s", drydock.ErrorMessage(err))
	case res.ExitCode != 0:
		return drydock.Errorf(drydock.EUNAVAILABLE, "ending the agent's processes in the sandbox failed (exit code %d): %s", res.ExitCode, strings.TrimSpace(stderr.String()))
	}
	return nil
}
