package toolbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
)

// MaxDiffBytes bounds a workspace diff. A larger one is cut at a line end
// before this size and ends with DiffTruncatedMarker's line.
const MaxDiffBytes = 8 << 20

// DiffTruncatedMarker starts the last line of a diff cut at MaxDiffBytes.
const DiffTruncatedMarker = "drydock: diff truncated"

// maxIgnoredShown bounds the drydock.DiffIgnoredMarker lines of a diff; past it
// one more line says how many paths are not named.
const maxIgnoredShown = 100

// The diff's git directory lives outside the workspace (so neither the
// archive nor the agent's own .git sees it): beside the workspace when its
// parent is writable (runtime/local), else in the sandbox's home. Global and
// system configuration, hooks, fsmonitor, external diff drivers and
// textconv filters are off, so a file in the workspace or a setting the
// agent made cannot change what the diff shows or run anything (and all of
// it runs in the sandbox, never on the host). The workspace's own
// .gitignore files are honoured, as git does: ignored files (node_modules,
// build output) are in the archive but not in the diff.
const diffPrelude = `set -eu
command -v git >/dev/null 2>&1 || { echo "git is not installed in the sandbox" >&2; exit 127; }
ws=$(pwd -P)
if [ -w "$ws/.." ]; then d="$ws/../.drydock-diff.git"; else d="${HOME:?HOME is not set}/.drydock/diff.git"; fi
export GIT_DIR="$d" GIT_WORK_TREE="$ws" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0
g() { git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.autocrlf=false -c core.safecrlf=false -c core.quotePath=true -c advice.addEmbeddedRepo=false -c gc.auto=0 "$@"; }
`

const baselineScript = diffPrelude + `rm -rf "$d"
mkdir -p "$d"
g init -q
g add -A
g -c user.name=drydock -c user.email=drydock@localhost commit -q --no-verify --allow-empty -m "drydock baseline"
g update-ref refs/drydock/baseline HEAD
g rev-parse HEAD
`

// diffScript diffs the working tree against the baseline commit in a git
// directory of its own, made afresh in a temporary directory, that only
// borrows the objects of the one the baseline wrote (alternates): the
// configuration, info/exclude, hooks and index of that directory, which the
// sandbox's processes can write, are never read. The baseline commit is the
// one the caller recorded (DRYDOCK_DIFF_BASE), or else the directory's ref.
// With DRYDOCK_DIFF_VERIFY=1, git fsck first checks every object against its
// name, so a starting point rewritten in the sandbox fails the diff instead
// of hiding a change. The index starts from the commit's tree with no file
// times, so every file is compared by content. Nothing of the final
// workspace is written into a git directory: a large new file costs the
// sandbox no space, and a diff cut at the limit stops git before it read
// everything.
const diffScript = diffPrelude + `base=${DRYDOCK_DIFF_BASE:-}
if [ -z "$base" ]; then
	base=$(g rev-parse -q --verify refs/drydock/baseline^{commit}) || { echo "no baseline: the job's starting point was not recorded" >&2; exit 3; }
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -d "$d/objects" ] || { echo "the job's starting point ($d) is gone from the sandbox" >&2; exit 4; }
export GIT_DIR="$tmp/git" GIT_INDEX_FILE="$tmp/index"
g init -q
printf '%s\n' "$d/objects" >"$GIT_DIR/objects/info/alternates"
g cat-file -e "$base^{commit}" 2>/dev/null || { echo "the job's starting point (commit $base) is gone from the sandbox's copy" >&2; exit 4; }
if [ "${DRYDOCK_DIFF_VERIFY:-}" = 1 ]; then
	out=$(g fsck --full --no-dangling --no-progress "$base" 2>&1) || { printf 'the copy of the job'"'"'s starting point kept in the sandbox was altered: %.300s\n' "$out" >&2; exit 4; }
fi
g read-tree "$base"
# Without -z, git quotes a name with unusual bytes (core.quotePath), so a
# newline in a name cannot start a line of its own.
g ls-files --others --ignored --exclude-standard --directory --no-empty-directory -- . | awk -v max="$DRYDOCK_DIFF_IGNORED_MAX" -v m="$DRYDOCK_DIFF_IGNORED_MARKER" '
	NR <= max { print m $0 }
	END { if (NR > max) printf "%s... and %d more\n", m, NR - max }'
g add --intent-to-add -- .
g diff --no-color --no-ext-diff --no-textconv --src-prefix=a/ --dst-prefix=b/ -M "$@" "$base" --
`

// Baseline records the workspace as it is now as the starting point that
// Diff compares with, replacing any earlier one, and returns its commit id.
func (c *Client) Baseline(ctx context.Context) (string, error) {
	var out, errb bytes.Buffer
	res, err := c.Exec(ctx, ExecRequest{Args: []string{"sh", "-c", baselineScript}, Timeout: drydock.Duration(5 * time.Minute)}, &out, &limited{b: &errb, n: 4096})
	if err != nil {
		return "", fmt.Errorf("record baseline: %w", err)
	}
	if res.ExitCode != 0 {
		return "", drydock.Errorf(drydock.EUNAVAILABLE, "record baseline: exit %d: %s", res.ExitCode, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// DiffResult is a workspace's diff against its baseline.
type DiffResult struct {
	Patch []byte
	// Truncated says Patch was cut at MaxDiffBytes; its last line then
	// starts with DiffTruncatedMarker.
	Truncated bool
}

// ErrNoBaseline is returned by Diff for a sandbox without a baseline.
var ErrNoBaseline = errors.New("no baseline")

// DiffOptions says how DiffWith diffs.
type DiffOptions struct {
	// Binary gives binary files a git binary patch; without it they show
	// only "Binary files ... differ".
	Binary bool
	// Mask, when not nil, rewrites the patch before it is cut to size, so a
	// secret value that spans the cut is masked too.
	Mask func(string) string
	// Base is the baseline commit Baseline returned, kept outside the
	// sandbox; "" takes the one the sandbox's git directory names.
	Base string
	// Verify checks every object of the starting point against its name
	// first (git fsck): slower, and only meaningful once no process of the
	// sandbox can change it while the diff runs.
	Verify bool
}

// Diff returns the unified diff (git format, renames found) of the
// workspace against the baseline the sandbox names: DiffWith with only
// Binary and Mask.
func (c *Client) Diff(ctx context.Context, binary bool, mask func(string) string) (*DiffResult, error) {
	return c.DiffWith(ctx, DiffOptions{Binary: binary, Mask: mask})
}

// DiffWith returns the unified diff (git format, renames found) of the
// workspace against its baseline, as opts say.
func (c *Client) DiffWith(ctx context.Context, opts DiffOptions) (*DiffResult, error) {
	binary, mask := opts.Binary, opts.Mask
	env := map[string]string{"DRYDOCK_DIFF_IGNORED_MARKER": drydock.DiffIgnoredMarker, "DRYDOCK_DIFF_IGNORED_MAX": strconv.Itoa(maxIgnoredShown)}
	if opts.Base != "" {
		if !isCommitID(opts.Base) {
			return nil, drydock.Errorf(drydock.EINVALID, "diff workspace: %q is not a commit id", opts.Base)
		}
		env["DRYDOCK_DIFF_BASE"] = opts.Base
	}
	if opts.Verify {
		env["DRYDOCK_DIFF_VERIFY"] = "1"
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Keep a little more than the limit, so that masking sees the values
	// that cross it, then stop git: a diff of gigabytes is not read whole.
	out := &limited{b: &bytes.Buffer{}, n: MaxDiffBytes + 64<<10, full: cancel}
	var errb bytes.Buffer
	args := []string{"sh", "-c", diffScript, "sh"}
	if binary {
		args = append(args, "--binary")
	}
	res, err := c.Exec(ctx, ExecRequest{Args: args, Env: env, Timeout: drydock.Duration(5 * time.Minute)}, out, &limited{b: &errb, n: 4096})
	switch {
	case out.over:
		// Cut on purpose; how git ended does not matter.
	case err != nil:
		return nil, fmt.Errorf("diff workspace: %w", err)
	case res.ExitCode == 3:
		return nil, ErrNoBaseline
	case res.ExitCode == 4:
		// The starting point the sandbox kept is gone or is not the one
		// recorded: a diff against it could hide a change.
		return nil, drydock.Errorf(drydock.ECONFLICT, "%s", strings.TrimSpace(errb.String()))
	case res.ExitCode != 0:
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "diff workspace: exit %d: %s", res.ExitCode, strings.TrimSpace(errb.String()))
	}
	patch := out.b.String()
	if mask != nil {
		patch = mask(patch)
	}
	if !out.over && len(patch) <= MaxDiffBytes {
		return &DiffResult{Patch: []byte(patch)}, nil
	}
	marker := fmt.Sprintf("%s at %d MiB: the archive holds the whole workspace\n", DiffTruncatedMarker, MaxDiffBytes>>20)
	cut := patch[:MaxDiffBytes-len(marker)]
	if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
		cut = cut[:i+1]
	}
	return &DiffResult{Patch: []byte(cut + marker), Truncated: true}, nil
}

// limited keeps the first n bytes written and drops the rest; full, when
// set, is called once when more arrive.
type limited struct {
	b    *bytes.Buffer
	n    int
	full func()
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room < len(p) {
		l.b.Write(p[:max(room, 0)])
		if !l.over && l.full != nil {
			l.full()
		}
		l.over = true
		return len(p), nil
	}
	return l.b.Write(p)
}

// isCommitID reports whether s is a full hexadecimal object name (SHA-1
// or SHA-256).
func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
