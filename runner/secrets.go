package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/secretbox"
)

// openSecrets unseals the job's secrets into job.Secrets, where the agent
// finds the values it must mask. It fails, with a message for the job's
// owner, when this server cannot open them.
func (r *Runner) openSecrets(job *drydock.Job) error {
	if len(job.SealedSecrets) == 0 {
		return nil
	}
	if r.deps.Secrets == nil {
		return drydock.Errorf(drydock.EUNAVAILABLE, "the job has secrets but this server has no secrets key (--secrets-key-file); it cannot give them to the sandbox")
	}
	s, err := r.deps.Secrets.Open(job.ID, job.SealedSecrets)
	if errors.Is(err, secretbox.ErrWrongKey) {
		return drydock.Errorf(drydock.EUNAVAILABLE, "the job's secrets were sealed under another secrets key than this server's (--secrets-key-file changed, or replicas do not share one); schedule the job again with its secrets")
	}
	if err != nil {
		return drydock.Errorf(drydock.EUNAVAILABLE, "the job's secrets cannot be opened (%v); schedule the job again with its secrets", err)
	}
	job.Secrets = s
	return nil
}

// giveSecrets sets the job's secrets, over the server's own variables
// (trust: where the trusted CAs are), as variables of every process the
// sandbox starts from now on; a secret of the same name wins, being the
// job's explicit choice. It runs once the sandbox is ready and before the
// agent's first tool call, for a new, warm or reattached sandbox alike;
// setting the same variables again changes nothing in the sandbox.
func (r *Runner) giveSecrets(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox, trust map[string]string, log *slog.Logger) error {
	env := maps.Clone(trust)
	if env == nil {
		env = map[string]string{}
	}
	// The repository's token is not among them (agentSecrets).
	maps.Copy(env, agentSecrets(job))
	if len(env) == 0 {
		return nil
	}
	if len(env) > drydock.MaxSecrets {
		return drydock.Errorf(drydock.EINVALID, "the job's %d secrets and the %d variables of the server's trusted CAs (--sandbox-ca) are more than the %d a sandbox takes; give the job at most %d secrets", len(job.Secrets), len(trust), drydock.MaxSecrets, drydock.MaxSecrets-len(trust))
	}
	res, err := r.deps.Toolbox(sb).SetEnv(ctx, env)
	if drydock.ErrorCode(err) == drydock.ENOTFOUND {
		return drydock.Errorf(drydock.EUNAVAILABLE, "the sandbox's toolboxd is too old to take the job's secrets (it needs toolbox API 4: rebuild the image with drydock image build)")
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %w", drydock.Errorf(drydock.EUNAVAILABLE, "giving the sandbox the job's secrets failed: %s", drydock.ErrorMessage(err)), err)
	}
	log.Info("secrets set in the sandbox", "names", res.Names, "kernel_restarted", res.KernelRestarted)
	return nil
}

// mask hides the job's secret values in a text the runner writes (an error,
// a summary) with as many '*' as they have bytes.
func mask(job *drydock.Job, s string) string {
	if len(job.Secrets) == 0 {
		return s
	}
	return secretbox.MaskString(s, maskValues(job))
}

// maskValues are the job's values as they appear in text and, escaped, in
// JSON.
func maskValues(job *drydock.Job) []string {
	vals := job.Secrets.Values()
	for _, v := range job.Secrets.Values() {
		b, _ := json.Marshal(v)
		if e := strings.Trim(string(b), `"`); e != v {
			vals = append(vals, e)
		}
	}
	return vals
}
