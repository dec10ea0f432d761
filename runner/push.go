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
	git, err := r.sandboxGit(job, sb)
	if err != nil {
		return "", err
	}
	name, email, err := job.Repo.Push.AuthorParts()
	if err != nil {
		return "", err
	}
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email} {
		git.env[k] = v
	}
	// The tools' saved outputs are the orchestrator's, not the change.
	if _, err := git.run(ctx, "staging the changes failed", nil, "git", "add", "--all", "--", ".", ":(exclude).drydock"); err != nil {
		return "", err
	}
	staged, err := git.run(ctx, "listing the changes failed", nil, "git", "diff", "--cached", "--name-only")
	if err != nil {
		return "", err
	}
	if staged != "" {
		msg := strings.TrimSpace(mask(job, summary))
		if msg == "" {
			msg = "Changes made by a Drydock job"
		}
		msg += "\n\nDrydock-Job: " + job.ID + "\n"
		if _, err := git.run(ctx, "committing the changes failed", []byte(msg), "git", "commit", "--quiet", "--no-verify", "--file", "-"); err != nil {
			return "", err
		}
	}
	head, err := git.run(ctx, "reading the commit failed", nil, "git", "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	if head == base {
		return "", nil
	}
	if _, err := git.run(ctx, "git push failed", nil, "git", "push", "--quiet", "--no-verify", job.Repo.URL, "HEAD:refs/heads/"+job.Repo.Push.Branch); err != nil {
		return "", err
	}
	return head, nil
}
