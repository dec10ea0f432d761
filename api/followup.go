package api

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/google/uuid"
)

// A follow-up: POST /v1/jobs/{id}/messages on a finished job
// creates a job that continues it. Its workspace starts as the parent's
// archive, copied to the child's input (so the parent's retention cannot
// take it away), and its agent starts from the ancestors' conversation,
// which the runner loads; the message is the child's task.

// followUpRequest is the body of a message to a finished job: the text and
// the job fields a follow-up may override. A field left out is inherited
// from the parent (model, profile, egress, context_budget, metadata) or
// the server's default (max_steps, timeout: each job gets a budget of its
// own). Pointers tell a field left out from one given as its zero value.
type followUpRequest struct {
	Text     *string              `json:"text"`
	Model    *string              `json:"model"`
	MaxSteps int                  `json:"max_steps"`
	Timeout  drydock.Duration     `json:"timeout"`
	Profile  *drydock.Profile     `json:"profile"`
	Metadata map[string]string    `json:"metadata"`
	Budget   *int                 `json:"context_budget"`
	Egress   *[]string            `json:"egress"`
	Secrets  drydock.SecretValues `json:"secrets"`
	// Interactive overrides the parent's (ask_user).
	Interactive *bool `json:"interactive"`
	// Agent "none" holds the parent's finished workspace in a fresh
	// sandbox for the caller (a check, an inspection) instead of giving
	// it to an agent; omitted, the follow-up has the server's agent.
	Agent *string `json:"agent"`
	// Repo and Task are refused with a message rather than as unknown
	// fields: a follow-up's workspace and task are the parent's archive
	// and the message.
	Repo *drydock.RepoSpec `json:"repo"`
	Task *string           `json:"task"`
}

var followUpBody = bodyHelp{
	fields:  "text, and for a follow-up of a finished job: model, max_steps, timeout, profile, metadata, context_budget, egress, secrets, interactive, agent",
	example: `{"text": "..."}`,
}

// followUp creates the job that continues the finished job parent with
// the message in body, and answers 201 with it (Location: its status),
// as POST /v1/jobs does, Idempotency-Key included. Nothing is stored when
// it refuses.
func (s *Server) followUp(w http.ResponseWriter, r *http.Request, parent *drydock.Job, body []byte) {
	key, keyed, err := idempotencyKey(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req followUpRequest
	if err := decodeJSONBytes(body, &req, followUpBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	var inherited drydock.SecretValues
	if req.Secrets == nil {
		if inherited, err = s.keptSecrets(parent); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	spec, err := req.spec(parent, inherited)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.checkChain(r.Context(), parent); err != nil {
		s.writeError(w, r, err)
		return
	}
	if parent.ArtifactKey == "" {
		s.writeError(w, r, drydock.Errorf(drydock.ECONFLICT, "job %s has no archived workspace (it ended %s before its workspace was archived); a follow-up starts from the parent's archive and needs one", parent.ID, parent.Status))
		return
	}
	egress, egressSource := spec.Egress, parent.EgressSource
	if req.Egress != nil {
		egress, egressSource, err = s.cfg.Egress.Resolve(spec.Egress)
	} else if err = s.cfg.Egress.Check(egress); err != nil {
		err = drydock.Errorf(drydock.ErrorCode(err), "%s (the list is inherited from job %s; give \"egress\" to replace it)", drydock.ErrorMessage(err), parent.ID)
	}
	if err == nil && inherited != nil && req.Egress != nil {
		// Inherited secrets keep the parent's reach: a follow-up may only
		// narrow it, so that a token alone cannot send the parent's secrets
		// somewhere the parent could not reach.
		for _, e := range egress {
			if !slices.Contains(parent.Egress, e) {
				err = drydock.Errorf(drydock.EINVALID, "egress %q is beyond what job %s could reach, and the follow-up inherits its secrets: give \"secrets\" again to widen its egress, or keep within the parent's list", e, parent.ID)
				break
			}
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := uuid.NewV7()
	if err != nil {
		s.writeError(w, r, fmt.Errorf("new job id: %w", err))
		return
	}
	job := &drydock.Job{
		ID:          id.String(),
		Status:      drydock.StatusPending,
		CreatedAt:   time.Now().UTC(),
		JobSpec:     spec,
		OwnerID:     principalFrom(r.Context()).ID,
		ParentJobID: parent.ID,
	}
	job.Egress, job.EgressSource = egress, egressSource
	fpSpec := job.JobSpec // before sealing, which clears the values
	if err := s.sealSecrets(job); err != nil {
		s.writeError(w, r, err)
		return
	}
	// A copy is as much disk work as an upload: it takes one of the same
	// slots, so that many follow-ups of a large workspace at once cannot
	// saturate the artifact store.
	release, ok := s.acquireUpload()
	if !ok {
		s.writeError(w, r, drydock.Errorf(drydock.ETOOMANY, "this server is receiving or copying %d workspaces already; try again shortly", cap(s.uploads)))
		return
	}
	defer release()
	if err := s.copyParentArchive(r.Context(), job, parent); err != nil {
		s.writeError(w, r, err)
		return
	}
	// The parent is part of what the request asks for: the same message to
	// another job is another request.
	if job = s.commit(w, r, job, key, keyed, fpSpec, []byte("follow-up of "+parent.ID)); job != nil {
		s.log.Info("follow-up job created", "job_id", job.ID, "parent_job_id", parent.ID, "owner", job.OwnerID)
	}
}

// spec is the follow-up's job spec: the parent's, with the message as the
// task and the request's fields over it.
func (req *followUpRequest) spec(parent *drydock.Job, inherited drydock.SecretValues) (drydock.JobSpec, error) {
	if req.Task != nil {
		return drydock.JobSpec{}, drydock.Errorf(drydock.EINVALID, `a follow-up's task is its message: give "text", not "task"`)
	}
	if req.Text == nil {
		return drydock.JobSpec{}, drydock.Errorf(drydock.EINVALID, `text is required: send {"text": "..."}`)
	}
	if err := drydock.ValidateMessageText(*req.Text); err != nil {
		return drydock.JobSpec{}, err
	}
	if req.Repo != nil {
		return drydock.JobSpec{}, drydock.Errorf(drydock.EINVALID, `a follow-up continues job %s's workspace; it cannot take "repo" (start a new job for another repository)`, parent.ID)
	}
	// Inherited: everything the parent asked for but its budgets, its
	// repository (already in the archived workspace; it is not cloned or
	// pushed again) and its secrets (below).
	spec := parent.JobSpec
	spec.Task = *req.Text
	spec.MaxSteps, spec.Timeout = req.MaxSteps, req.Timeout
	spec.Repo, spec.Secrets = nil, nil
	spec.Metadata = maps.Clone(parent.Metadata)
	spec.Egress = slices.Clone(parent.Egress)
	if spec.Egress == nil {
		spec.Egress = []string{} // inherited "none" stays none, not the server's default
	}
	if req.Model != nil {
		spec.Model = *req.Model
	}
	if req.Profile != nil {
		spec.Profile = *req.Profile
	}
	if req.Metadata != nil {
		spec.Metadata = req.Metadata
	}
	if req.Budget != nil {
		spec.ContextBudget = *req.Budget
	}
	// A held job takes no follow-up (handleMessages), so the parent always
	// had an agent; the follow-up has one too unless it asks for none.
	spec.Agent = ""
	if req.Agent != nil {
		spec.Agent = *req.Agent
	}
	if req.Interactive != nil {
		spec.Interactive = *req.Interactive
	} else if spec.Agent == drydock.AgentNone {
		spec.Interactive = false // nobody would be asked: the parent's ask_user does not carry over
	}
	if req.Egress != nil {
		spec.Egress = *req.Egress
		if spec.Egress == nil {
			spec.Egress = []string{} // "egress": null is no list, as [] is
		}
	}
	// Secrets given replace the parent's whole set; left out, the parent's
	// are inherited while it keeps them (the server's follow-up window).
	// Once they are erased, a follow-up that needs them must give them
	// again, and one that does not must say so, rather than run without
	// them unawares.
	spec.Secrets = req.Secrets
	if req.Secrets == nil && len(parent.SecretNames) > 0 {
		if inherited == nil {
			return drydock.JobSpec{}, drydock.Errorf(drydock.EINVALID, `job %s ran with the secrets %s, whose values were erased (a finished job keeps them for the server's --follow-up-secrets window only); give them again in "secrets" (the CLI: --secret NAME), or "secrets": {} to continue without them`,
				parent.ID, strings.Join(parent.SecretNames, ", "))
		}
		spec.Secrets = inherited
	}
	spec.Normalize()
	if err := spec.Validate(); err != nil {
		return spec, err
	}
	if spec.Profile == "" {
		spec.Profile = drydock.ProfileHeadless
	}
	return spec, nil
}

// checkChain refuses a follow-up that would make the chain of follow-ups
// longer than drydock.MaxFollowUpDepth: the runner loads every ancestor's
// conversation.
func (s *Server) checkChain(ctx context.Context, parent *drydock.Job) error {
	depth := 1 // the parent's place in its chain, counted up to the bound
	for j := parent; j.ParentJobID != "" && depth < drydock.MaxFollowUpDepth; depth++ {
		up, err := s.store.GetJob(ctx, j.ParentJobID)
		if err != nil {
			return fmt.Errorf("load job %s, an ancestor of job %s: %w", j.ParentJobID, parent.ID, err)
		}
		j = up
	}
	if depth >= drydock.MaxFollowUpDepth {
		return drydock.Errorf(drydock.ECONFLICT, "a chain of follow-ups holds at most %d jobs and job %s ends one that long; start a new job from its workspace (download it and upload it)", drydock.MaxFollowUpDepth, parent.ID)
	}
	return nil
}

// copyParentArchive stores a copy of the parent's archived workspace as
// the job's input, which the runner unpacks before the agent starts (as
// an upload's). A copy rather than a reference: deleting the parent's
// artifacts must not break a follow-up that has not started, nor would a
// follow-up that is refused delete them.
func (s *Server) copyParentArchive(ctx context.Context, job, parent *drydock.Job) error {
	rc, err := s.artifacts.Get(ctx, parent.ArtifactKey)
	if drydock.ErrorCode(err) == drydock.ENOTFOUND {
		return drydock.Errorf(drydock.ECONFLICT, "job %s has no archived workspace (its archive is no longer in the artifact store); a follow-up starts from the parent's archive and needs one", parent.ID)
	}
	if err != nil {
		return fmt.Errorf("open the archive of job %s: %w", parent.ID, err)
	}
	defer rc.Close()
	key := inputKey(job.ID)
	n, err := s.artifacts.Put(ctx, key, rc)
	if err != nil {
		return fmt.Errorf("copy the archive of job %s for its follow-up %s: %w", parent.ID, job.ID, err)
	}
	job.InputKey, job.InputSize = key, n
	return nil
}

// keptSecrets opens the secrets a finished parent still keeps for its
// follow-ups: nil when it had none, or they were erased, or its follow-up
// window has passed (the reaper may not have erased them yet).
func (s *Server) keptSecrets(parent *drydock.Job) (drydock.SecretValues, error) {
	if len(parent.SealedSecrets) == 0 || s.cfg.FollowUpSecrets <= 0 || parent.FinishedAt == nil ||
		time.Since(*parent.FinishedAt) >= s.cfg.FollowUpSecrets {
		return nil, nil
	}
	if s.cfg.Secrets == nil {
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "job %s kept its secrets for follow-ups, but this server has no secrets key to open them; give them again in \"secrets\"", parent.ID)
	}
	vals, err := s.cfg.Secrets.Open(parent.ID, parent.SealedSecrets)
	if err != nil {
		s.log.Warn("open a finished job's kept secrets for its follow-up", "job_id", parent.ID, "err", err)
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "job %s kept its secrets for follow-ups, but this server cannot open them (its secrets key differs); give them again in \"secrets\"", parent.ID)
	}
	return vals, nil
}
