package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// repoExecer is what seeding from a repository needs of a sandbox's
// toolboxd beyond Toolbox: one process with its own environment. It is an
// optional capability, so the runner's other fakes need not grow it.
type repoExecer interface {
	Exec(ctx context.Context, req toolbox.ExecRequest, stdout, stderr io.Writer) (*toolbox.ExecResult, error)
}

// repoCloneTimeout bounds the clone (the job's own timeout bounds it too).
const repoCloneTimeout = 30 * time.Minute

// seedRepo clones the job's repository into the workspace before the agent
// starts. git runs in the sandbox through toolboxd, so its traffic takes
// the sandbox's egress proxy (which allows the repository's host and port
// for the job: drydock.Job.EgressRules). The token travels only in the
// environment of the git processes, as an http.extraHeader given through
// GIT_CONFIG_* variables: never in a command line, .git/config, an event or
// a log. A recovered job whose clone completed is not cloned again; one
// whose clone did not complete (the previous server stopped during it, so
// the agent never ran) gets an emptied workspace and a fresh clone.
func (r *Runner) seedRepo(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox, emit *emitter, reattach bool, log *slog.Logger) error {
	repo := job.Repo
	if repo == nil {
		return nil
	}
	if reattach {
		commit, err := r.clonedCommit(ctx, job.ID)
		if err != nil || commit != "" {
			return err
		}
	}
	git, err := r.sandboxGit(job, sb)
	if err != nil {
		return err
	}
	if reattach {
		if _, err := git.run(ctx, "emptying the workspace of an unfinished clone", nil, "find", ".", "-mindepth", "1", "-delete"); err != nil {
			return err
		}
	}
	desc := repo.URL
	if repo.Ref != "" {
		desc += " at " + repo.Ref
	}
	emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "info", Message: "cloning " + desc})
	t0 := time.Now()
	what := "cloning " + desc + " failed"
	switch {
	case repo.Ref == "":
		_, err = git.run(ctx, what, nil, "git", "clone", "--quiet", "--", repo.URL, ".")
	case repo.IsCommit():
		if _, err = git.run(ctx, what, nil, "git", "clone", "--quiet", "--no-checkout", "--", repo.URL, "."); err == nil {
			_, err = git.run(ctx, "checking out commit "+repo.Ref+" of "+repo.URL+" failed", nil, "git", "checkout", "--quiet", "--detach", repo.Ref)
		}
	default:
		_, err = git.run(ctx, what, nil, "git", "clone", "--quiet", "--branch", repo.Ref, "--", repo.URL, ".")
	}
	if err != nil {
		return err
	}
	commit, err := git.run(ctx, "reading the cloned commit failed", nil, "git", "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("The workspace holds a clone of %s (commit %s).", desc, commit)
	if err := emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "info", Message: msg, Notice: true, Kind: drydock.LogRepoCloned,
		URL: repo.URL, Ref: repo.Ref, Commit: commit}); err != nil {
		return err
	}
	log.Info("repository cloned", "url", repo.URL, "ref", repo.Ref, "commit", commit, "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

// sandboxGit runs git (and find) in a job's sandbox with repoEnv.
type sandboxGit struct {
	tb  repoExecer
	job *drydock.Job
	env map[string]string
}

func (r *Runner) sandboxGit(job *drydock.Job, sb *drydock.Sandbox) (*sandboxGit, error) {
	tb, ok := r.deps.Toolbox(sb).(repoExecer)
	if !ok {
		return nil, drydock.Errorf(drydock.EINTERNAL, "this server's toolbox client cannot run processes; the repository cannot be used")
	}
	env, err := repoEnv(job)
	if err != nil {
		return nil, err
	}
	return &sandboxGit{tb: tb, job: job, env: env}, nil
}

// run runs args in the workspace and returns its standard output; a
// failure is an error that starts with what and holds git's message
// (masked with the job's other texts by execute).
func (g *sandboxGit) run(ctx context.Context, what string, stdin []byte, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	res, err := g.tb.Exec(ctx, toolbox.ExecRequest{Args: args, Env: g.env, Stdin: stdin, Timeout: drydock.Duration(repoCloneTimeout)},
		&limitedBuffer{buf: &out, max: 4 << 10}, &limitedBuffer{buf: &errOut, max: 16 << 10})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", drydock.Errorf(drydock.EUNAVAILABLE, "%s: the sandbox did not run git: %s", what, drydock.ErrorMessage(err))
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(errOut.String())
		if res.TimedOut {
			msg = fmt.Sprintf("it did not finish within %s", repoCloneTimeout)
		}
		if msg == "" {
			msg = "git exited with status " + strconv.Itoa(res.ExitCode)
		}
		if strings.Contains(msg, "could not read Username") || strings.Contains(msg, "Authentication failed") {
			// git's own words blame a terminal it was told not to use.
			if g.job.Repo.Secret == "" {
				msg = "the repository asks for credentials: name a job secret holding a token in repo.secret (" + msg + ")"
			} else {
				msg = "the repository refused the token in the job's secret " + g.job.Repo.Secret + " (" + msg + ")"
			}
		}
		if what == "" {
			return "", drydock.Errorf(drydock.EINVALID, "%s", msg)
		}
		return "", drydock.Errorf(drydock.EINVALID, "%s: %s", what, msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// repoEnv is the environment of the git processes: the token as an
// Authorization header (GIT_CONFIG_*, read by git and never written to a
// file), no prompt that would wait for a terminal, no transport but http
// and https (whatever a redirect or a submodule names), no credential
// helper. The system configuration stays: the image may name its CAs there.
func repoEnv(job *drydock.Job) (map[string]string, error) {
	cfg := [][2]string{{"credential.helper", ""}, {"advice.detachedHead", "false"}}
	if name := job.Repo.Secret; name != "" {
		token, ok := job.Secrets[name]
		if !ok {
			return nil, drydock.Errorf(drydock.EINVALID, "repo.secret names %s, which is not one of the job's secrets", name)
		}
		user, pass := drydock.RepoBasicAuth(token)
		cfg = append(cfg, [2]string{"http.extraHeader", "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))})
	}
	env := map[string]string{
		"GIT_TERMINAL_PROMPT": "0",
		"GIT_ALLOW_PROTOCOL":  "http:https",
		"GIT_TRACE_REDACT":    "1",
		"GIT_CONFIG_COUNT":    strconv.Itoa(len(cfg)),
	}
	for i, kv := range cfg {
		env["GIT_CONFIG_KEY_"+strconv.Itoa(i)] = kv[0]
		env["GIT_CONFIG_VALUE_"+strconv.Itoa(i)] = kv[1]
	}
	return env, nil
}

// clonedCommit is the commit the job's log records a completed clone of,
// or "" when there is none.
func (r *Runner) clonedCommit(ctx context.Context, jobID string) (string, error) {
	return r.loggedCommit(ctx, jobID, drydock.LogRepoCloned)
}

// loggedCommit is the commit of the first log event of this kind in the
// job's log, or "" when there is none.
func (r *Runner) loggedCommit(ctx context.Context, jobID, kind string) (string, error) {
	for after := int64(0); ; {
		page, err := r.deps.Store.ListEvents(ctx, jobID, after, 1000)
		if err != nil {
			return "", fmt.Errorf("load event log: %w", err)
		}
		for _, ev := range page {
			if ev.Type != drydock.EventLog {
				continue
			}
			var d drydock.LogEvent
			if json.Unmarshal(ev.Data, &d) == nil && d.Kind == kind && d.Commit != "" {
				return d.Commit, nil
			}
		}
		if len(page) < 1000 {
			return "", nil
		}
		after = page[len(page)-1].Seq
	}
}

// limitedBuffer keeps the first max bytes written and drops the rest, so
// a chatty process cannot fill the server's memory.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// sandboxEgress is what the sandbox must be able to reach: the job's list
// and its repository's host and port, so that a runtime that cannot give
// a sandbox any way out (Kubernetes without an egress gateway) refuses a
// repository job at once instead of failing its clone.
func sandboxEgress(job *drydock.Job) []string {
	if job.Repo == nil {
		return job.Egress
	}
	rule, err := job.Repo.EgressRule()
	if err != nil {
		return job.Egress
	}
	return append(slices.Clone(job.Egress), rule.String())
}

// agentSecrets are the job's secrets that its sandbox's processes get as
// variables: all but the repository's token, which only git gets, while
// it clones and pushes. An agent led astray by what it reads in the
// repository cannot send a token it never sees; a job whose agent should
// have it too gives the value a second name.
func agentSecrets(job *drydock.Job) drydock.SecretValues {
	if job.Repo == nil || job.Repo.Secret == "" {
		return job.Secrets
	}
	env := maps.Clone(job.Secrets)
	delete(env, job.Repo.Secret)
	return env
}
