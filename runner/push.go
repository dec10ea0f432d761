package runner

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/drydockhq/drydock"
)

// pushRepo commits what a completed job changed in its clone (the agent's
// summary as the message, the job's author) and pushes it to the job's push
// branch, with the same token and environment as the clone. The push names
// the job's URL, not the workspace's origin, which the agent could have
// changed; hooks do not run. It never forces: a branch that moved elsewhere
// fails the job, with the work still in the archive. Nothing changed:
// nothing is pushed.
func (r *Runner) pushRepo(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox, emit *emitter, result *drydock.JobResult, log *slog.Logger) {
	if job.Repo == nil || job.Repo.Push == nil || sb == nil {
		return
	}
	commit, err := r.push(ctx, job, sb, result.Summary)
	switch {
	case err != nil:
		result.Status = drydock.StatusError
		result.Error = fmt.Sprintf("the job's work is in its archive, but pushing it to %s failed: %s", job.Repo.Push.Branch, drydock.ErrorMessage(err))
		log.Warn("push failed", "branch", job.Repo.Push.Branch, "err", mask(job, err.Error()))
	case commit == "":
		emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "info", Message: "the job changed nothing in the repository; nothing was pushed"})
	default:
		result.PushedCommit = commit
		emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "info", Kind: drydock.LogRepoPushed, Branch: job.Repo.Push.Branch, Commit: commit,
			Message: fmt.Sprintf("pushed commit %s to branch %s of %s", commit, job.Repo.Push.Branch, job.Repo.URL)})
		log.Info("pushed", "branch", job.Repo.Push.Branch, "commit", commit)
	}
}

// push returns the pushed commit, or "" when there was nothing to push.
func (r *Runner) push(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox, summary string) (string, error) {
	base, err := r.clonedCommit(ctx, job.ID)
	if err != nil {
		return "", err
	}
	if base == "" {
		return "", drydock.Errorf(drydock.ECONFLICT, "the job's log records no completed clone to push on top of")
	}
	git, err := r.sandboxGit(job, sb)
	if err != nil {
		return "", err
	}
	name, email, err := job.Repo.Push.AuthorParts()
	if err != nil {
		return "", err
	}
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email,
		"DRYDOCK_PUSH_BASE": base, "DRYDOCK_PUSH_URL": job.Repo.URL, "DRYDOCK_PUSH_BRANCH": job.Repo.Push.Branch} {
		git.env[k] = v
	}
	if err := r.quiesce(ctx, sb); err != nil {
		return "", fmt.Errorf("%w; nothing was pushed", err)
	}
	msg := strings.TrimSpace(mask(job, summary))
	if msg == "" {
		msg = "Changes made by a Drydock job"
	}
	msg += "\n\nDrydock-Job: " + job.ID + "\n"
	return git.run(ctx, "", []byte(msg), "/bin/sh", "-c", pushScript)
}

// pushScript commits the workspace on top of the cloned commit and pushes
// that commit, with nothing the agent could have arranged between the
// token and the repository's server:
//   - it runs once quiesce ended every other process of the sandbox, so
//     that none can read git's environment in /proc or change the files
//     below while git runs;
//   - git runs from /usr/bin with no global configuration (the agent's
//     ~/.gitconfig) and a repository of its own in a fresh directory, so
//     the workspace's .git/config (url.insteadOf, http.proxy, sslVerify,
//     hooks, filters) is never read: the workspace's objects are only
//     borrowed through alternates, for the cloned commit;
//   - the commit holds the workspace's files as they are (its .gitignore
//     honoured, .drydock left out), with the cloned commit as its one
//     parent, so commits the agent made are folded into it, authored by
//     the job's author.
//
// It prints the commit, or nothing when the files are the cloned commit's.
const pushScript = `set -u
PATH=/usr/bin:/bin
export PATH GIT_CONFIG_GLOBAL=/dev/null
fail() { printf '%s\n' "$*" >&2; exit 1; }
work=$PWD
[ -d "$work/.git/objects" ] || fail "the workspace has no .git directory any more, so the cloned commit is gone; nothing was pushed"
tmp=$(mktemp -d) || fail "no temporary directory"
trap 'rm -rf "$tmp"' EXIT
git init -q "$tmp/repo" >/dev/null 2>&1 || fail "git init failed"
printf '%s\n' "$work/.git/objects" >"$tmp/repo/.git/objects/info/alternates"
export GIT_DIR="$tmp/repo/.git" GIT_WORK_TREE="$work" GIT_INDEX_FILE="$tmp/index"
git cat-file -e "$DRYDOCK_PUSH_BASE^{commit}" 2>/dev/null || fail "the workspace's git history no longer holds the cloned commit $DRYDOCK_PUSH_BASE; nothing was pushed"
out=$(git read-tree "$DRYDOCK_PUSH_BASE" 2>&1) || fail "reading the cloned commit failed: $out"
out=$(git add --all -- . ':(exclude).drydock' 2>&1) || fail "staging the changes failed: $out"
tree=$(git write-tree 2>&1) || fail "writing the tree failed: $tree"
[ "$tree" = "$(git rev-parse "$DRYDOCK_PUSH_BASE^{tree}")" ] && exit 0
commit=$(git commit-tree "$tree" -p "$DRYDOCK_PUSH_BASE" -F - 2>&1) || fail "committing the changes failed: $commit"
out=$(git push --quiet --no-verify "$DRYDOCK_PUSH_URL" "$commit:refs/heads/$DRYDOCK_PUSH_BRANCH" 2>&1) || fail "git push failed: $out"
printf '%s' "$commit"`
