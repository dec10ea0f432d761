package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/google/uuid"
)

// createRequest is the body of POST /schedule, /submit and /v1/jobs.
type createRequest struct {
	Task     *string           `json:"task"`
	Prompt   *string           `json:"prompt"`
	Model    string            `json:"model"`
	MaxSteps int               `json:"max_steps"`
	Timeout  drydock.Duration  `json:"timeout"`
	Profile  drydock.Profile   `json:"profile"`
	Metadata map[string]string `json:"metadata"`
	Budget   int               `json:"context_budget"`
	Egress   []string          `json:"egress"`
	// Secrets are write-only: no answer, event or log line shows a value.
	Secrets drydock.SecretValues `json:"secrets"`
	Repo    *drydock.RepoSpec    `json:"repo"`
	// Interactive offers the agent ask_user.
	Interactive bool `json:"interactive"`
	// Agent "none" holds the sandbox for the caller.
	Agent string `json:"agent"`
}

var createBody = bodyHelp{
	fields:  "task (or prompt), model, max_steps, timeout, profile, metadata, context_budget, egress, secrets, repo, interactive, agent",
	example: `{"task": "..."}`,
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	key, keyed, err := idempotencyKey(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var (
		spec drydock.JobSpec
		in   *upload
	)
	if isMultipart(r) {
		release, ok := s.acquireUpload()
		if !ok {
			s.writeError(w, r, drydock.Errorf(drydock.ETOOMANY, "this server is receiving %d uploads already; try again shortly", cap(s.uploads)))
			return
		}
		defer release()
		in, err = s.readUpload(w, r)
		if in != nil {
			defer in.remove()
			spec = in.spec
		}
	} else {
		spec, err = s.readSpec(w, r)
	}
	if err == nil && in != nil && spec.Repo != nil {
		err = drydock.Errorf(drydock.EINVALID, `give the job either "repo" or an uploaded workspace, not both: both would fill /workspace`)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Resolved into the job, not into spec: the idempotency fingerprint is
	// of the request as sent (no list is not an empty list), so a retry
	// still matches after the server's default changed.
	egress, egressSource, err := s.cfg.Egress.Resolve(spec.Egress)
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
		ID:        id.String(),
		Status:    drydock.StatusPending,
		CreatedAt: time.Now().UTC(),
		JobSpec:   spec,
		OwnerID:   principalFrom(r.Context()).ID,
	}
	job.Egress, job.EgressSource = egress, egressSource
	if err := s.sealSecrets(job); err != nil {
		s.writeError(w, r, err)
		return
	}
	// The archive is stored before the job that names it, so that a
	// worker never claims a job whose input is missing; a job that is not
	// created drops it again.
	if in != nil {
		if err := s.storeInput(r.Context(), job, in); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	// After sealSecrets: a request with secrets that this server cannot
	// seal is refused before its fingerprint is made.
	s.commit(w, r, job, key, keyed, spec, in.digestOrNil())
}

// commit stores a new job, under the caller's Idempotency-Key when keyed
// (spec and input are what the key's fingerprint is made of), and answers
// 201 with it, or with the job an earlier request under the key created.
// The job's input archive is dropped when the job is not created, or when
// the earlier request's job (which has its own) is returned. It returns
// the job answered, nil when it answered an error.
func (s *Server) commit(w http.ResponseWriter, r *http.Request, job *drydock.Job, key string, keyed bool, spec drydock.JobSpec, input []byte) *drydock.Job {
	var err error
	if keyed {
		var (
			stored *drydock.Job
			fresh  bool
		)
		stored, fresh, err = s.createOnce(w, r, job, key, spec, input)
		if err == nil {
			if !fresh {
				s.dropInput(job)
			}
			job = stored
		}
	} else if err = s.store.CreateJob(r.Context(), job); err == nil {
		s.queue.Notify()
	}
	if err != nil {
		s.dropInput(job)
		s.writeError(w, r, fmt.Errorf("create job: %w", err))
		return nil
	}
	s.decorate(r, job)
	w.Header().Set("Location", job.StatusURL)
	writeJSON(w, http.StatusCreated, job)
	return job
}

// readSpec decodes and checks the JSON body of a job creation.
func (s *Server) readSpec(w http.ResponseWriter, r *http.Request) (drydock.JobSpec, error) {
	var req createRequest
	if err := s.decodeJSON(w, r, &req, createBody); err != nil {
		return drydock.JobSpec{}, err
	}
	return req.spec()
}

// spec checks a decoded creation request and returns its job spec.
func (req *createRequest) spec() (drydock.JobSpec, error) {
	spec := drydock.JobSpec{Model: req.Model, MaxSteps: req.MaxSteps, Timeout: req.Timeout, Profile: req.Profile, Metadata: req.Metadata,
		ContextBudget: req.Budget, Egress: req.Egress, Secrets: req.Secrets, Repo: req.Repo, Interactive: req.Interactive, Agent: req.Agent}
	switch {
	case req.Task != nil && req.Prompt != nil && strings.TrimSpace(*req.Task) != strings.TrimSpace(*req.Prompt):
		return spec, drydock.Errorf(drydock.EINVALID, `give either "task" or its synonym "prompt", not two different texts`)
	case req.Task != nil:
		spec.Task = *req.Task
	case req.Prompt != nil:
		spec.Task = *req.Prompt
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

// createOnce creates job under the caller's idempotency key, or returns
// the job an earlier request with the key and the same body (and the same
// uploaded archive, input's digest) created, its answer marked
// Idempotent-Replayed. A replay gets the status a first
// answer has (201), so that clients checking for 201 need no change.
func (s *Server) createOnce(w http.ResponseWriter, r *http.Request, job *drydock.Job, key string, spec drydock.JobSpec, input []byte) (*drydock.Job, bool, error) {
	fp, err := s.fingerprint(spec, input)
	if err != nil {
		return nil, false, err
	}
	stored, created, err := s.store.CreateJobOnce(r.Context(), job, drydock.IdempotencyKey{Key: key, Fingerprint: fp, TTL: s.cfg.IdempotencyTTL})
	if err != nil {
		return nil, false, err
	}
	if created {
		s.queue.Notify()
		return stored, true, nil
	}
	s.log.Info("job creation replayed for an idempotency key", "job_id", stored.ID, "owner", stored.OwnerID)
	w.Header().Set(headerReplayed, "true")
	return stored, false, nil
}

// lookup loads the job named in the path and checks the caller may see it.
func (s *Server) lookup(r *http.Request) (*drydock.Job, error) {
	id := r.PathValue("id")
	if _, err := uuid.Parse(id); err != nil {
		return nil, drydock.Errorf(drydock.ENOTFOUND, "job %q not found", id)
	}
	job, err := s.store.GetJob(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if !visible(principalFrom(r.Context()), job) {
		return nil, drydock.Errorf(drydock.ENOTFOUND, "job %s not found", id)
	}
	return job, nil
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	job, err := s.lookup(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	owner := "" // an admin sees every follow-up; others only their own
	if p := principalFrom(r.Context()); !p.Admin {
		owner = p.ID
	}
	if job.FollowUps, err = s.store.FollowUps(r.Context(), job.ID, owner); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.decorate(r, job)
	writeJSON(w, http.StatusOK, job)
}

// JobPage is the answer of GET /v1/jobs.
type JobPage struct {
	Jobs       []*drydock.Job `json:"jobs"`
	NextCursor string         `json:"next_cursor"`
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		if k != "status" && k != "limit" && k != "cursor" && k != "metadata" {
			s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "unknown query parameter %q; accepted: status, limit, cursor, metadata", k))
			return
		}
	}
	f := drydock.JobFilter{Cursor: q.Get("cursor"), Limit: 50}
	var err error
	p := principalFrom(r.Context())
	if !p.Admin {
		f.OwnerID = p.ID
	}
	for _, v := range q["status"] {
		for st := range strings.SplitSeq(v, ",") {
			st = strings.TrimSpace(st)
			if st == "" {
				continue
			}
			if !drydock.JobStatus(st).Valid() {
				s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "unknown status %q; use pending, running, complete, error or cancelled", st))
				return
			}
			f.Status = append(f.Status, drydock.JobStatus(st))
		}
	}
	if f.Metadata, err = metadataFilter(q["metadata"]); err != nil {
		s.writeError(w, r, err)
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "limit must be a number from 1 to 500"))
			return
		}
		f.Limit = n
	}
	jobs, next, err := s.store.ListJobs(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for _, j := range jobs {
		s.decorate(r, j)
	}
	if jobs == nil {
		jobs = []*drydock.Job{}
	}
	writeJSON(w, http.StatusOK, JobPage{Jobs: jobs, NextCursor: next})
}

// metadataFilter reads the list's metadata=KEY=VALUE parameters: every
// pair must be in a job's metadata for it to be listed.
func metadataFilter(params []string) (map[string]string, error) {
	if len(params) == 0 {
		return nil, nil
	}
	if len(params) > drydock.MaxMetadataKeys {
		return nil, drydock.Errorf(drydock.EINVALID, "at most %d metadata filters", drydock.MaxMetadataKeys)
	}
	m := map[string]string{}
	for _, p := range params {
		k, v, ok := strings.Cut(p, "=")
		switch {
		case !ok || k == "":
			return nil, drydock.Errorf(drydock.EINVALID, "metadata filter %q: give metadata=KEY=VALUE", p)
		case len(k) > drydock.MaxMetadataKeyLen || len(v) > drydock.MaxMetadataValLen:
			return nil, drydock.Errorf(drydock.EINVALID, "metadata filter %q: keys are at most %d bytes, values %d", p, drydock.MaxMetadataKeyLen, drydock.MaxMetadataValLen)
		}
		if w, dup := m[k]; dup && w != v {
			return nil, drydock.Errorf(drydock.EINVALID, "metadata filter gives key %q twice with different values; no job can match", k)
		}
		m[k] = v
	}
	return m, nil
}

func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	job, err := s.lookup(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	job, err = s.store.CancelJob(r.Context(), job.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if job.Status == drydock.StatusRunning {
		s.queue.Cancel(job.ID)
	}
	if job.Status.Terminal() {
		// A pending job cancelled here never reaches a runner, which
		// deletes the input of the jobs it ends.
		s.dropInput(job)
	}
	s.decorate(r, job)
	writeJSON(w, http.StatusAccepted, job)
}

// decorate fills the links of a job for the caller's base URL.
func (s *Server) decorate(r *http.Request, job *drydock.Job) {
	base := s.baseURL(r)
	id := url.PathEscape(job.ID)
	job.StatusURL = base + "/status/" + id
	job.EventsURL = base + "/v1/jobs/" + id + "/events"
	if job.Profile == drydock.ProfileDesktop {
		job.VNCURL = base + "/jobs/" + id + "/desktop"
	}
	if job.ArtifactKey != "" {
		job.DownloadURL = base + "/v1/jobs/" + id + "/artifact.zip"
		job.Result = job.DownloadURL
		job.DownloadURLTar = base + "/v1/jobs/" + id + "/artifact.tar.gz"
	}
	if job.ArtifactKey != "" || (job.SandboxID != "" && !job.Status.Terminal()) {
		job.DiffURL = base + "/v1/jobs/" + id + "/diff"
	}
	decoratePause(job)
}

// baseURL is PublicURL, else the request's Host as the boundary accepted
// it: on a loopback server a loopback name, so that a rebinding page cannot
// have links made to its own host.
func (s *Server) baseURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return strings.TrimRight(s.cfg.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + acceptedHost(r.Context())
}
