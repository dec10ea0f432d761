// Package clienttest runs an in-memory Drydock API server for tests of code
// built on package client (the SDK's own tests and the CLI's). It implements
// the job routes of docs/API.md (creation with or without a workspace,
// lists, events and streams, cancel, egress, messages and follow-ups,
// pause, archives, diffs, trajectories) over maps instead of a store and a
// runner: tests drive the jobs' lifecycle themselves with SetStatus, Emit
// and SetArtifact. It is a test double for clients, not a second server:
// the real one lives in package api, and the client package's behaviour
// tests run against both, so that where they disagree (links, ids, error
// answers, follow-ups) a test fails and the fake is brought back to the
// real one.
package clienttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/drydockhq/drydock"
)

// Server is the fake API. Its exported methods are safe for concurrent use.
type Server struct {
	// URL is the base URL of the server, such as http://127.0.0.1:41234.
	URL string

	srv *httptest.Server

	mu        sync.Mutex
	token     string
	changed   chan struct{} // closed and replaced on every change, to wake streams
	jobs      map[string]*drydock.Job
	order     []string // ids in creation order
	events    map[string][]*drydock.Event
	artifacts map[string]map[string][]byte // id -> format -> bytes
	diffs     map[string][]byte
	drops     int      // upcoming streams to cut after their first event
	streamIDs []string // Last-Event-ID (or after) of every stream request
	ping      time.Duration

	keys        map[string]idemRecord // Idempotency-Key → what it created
	lostAnswers int                   // upcoming creations whose answer is cut
	createKeys  []string              // Idempotency-Key of every creation request
}

// idemRecord is what an Idempotency-Key created, and from which request.
type idemRecord struct {
	spec string // the normalised spec as JSON
	id   string
}

// NewServer starts a server on 127.0.0.1; Close stops it.
func NewServer() *Server {
	s := &Server{
		changed:   make(chan struct{}),
		jobs:      map[string]*drydock.Job{},
		events:    map[string][]*drydock.Event{},
		artifacts: map[string]map[string][]byte{},
		diffs:     map[string][]byte{},
		ping:      15 * time.Second,
		keys:      map[string]idemRecord{},
	}
	mux := http.NewServeMux()
	for _, p := range []string{"POST /v1/jobs", "POST /schedule", "POST /submit"} {
		mux.HandleFunc(p, s.schedule)
	}
	mux.HandleFunc("GET /v1/jobs", s.list)
	mux.HandleFunc("GET /v1/jobs/{id}", s.job)
	mux.HandleFunc("GET /status/{id}", s.job)
	mux.HandleFunc("POST /v1/jobs/{id}/cancel", s.cancel)
	mux.HandleFunc("PUT /v1/jobs/{id}/egress", s.setEgress)
	mux.HandleFunc("POST /v1/jobs/{id}/messages", s.message)
	mux.HandleFunc("POST /v1/jobs/{id}/pause", s.pauseOp(drydock.OpPause))
	mux.HandleFunc("POST /v1/jobs/{id}/resume", s.pauseOp(drydock.OpResume))
	mux.HandleFunc("GET /v1/jobs/{id}/events", s.eventsHandler)
	mux.HandleFunc("GET /v1/jobs/{id}/artifact.tar.gz", s.artifact("tar.gz"))
	mux.HandleFunc("GET /v1/jobs/{id}/artifact.zip", s.artifact("zip"))
	mux.HandleFunc("GET /v1/jobs/{id}/diff", s.diff)
	mux.HandleFunc("GET /v1/jobs/{id}/trajectory", s.trajectory)
	s.srv = httptest.NewServer(s.auth(jsonMuxErrors(mux)))
	s.URL = s.srv.URL
	return s
}

// Close stops the server and ends every open stream.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// The principal changes are recorded as made by: development mode's
// without a token, a token's (FakeTokenID, FakeTokenName) with one, as the
// real server names them.
const (
	FakeTokenID   = "tok_clienttest"
	FakeTokenName = "clienttest"
)

// principal is the id and name of who makes the requests.
func (s *Server) principal() (id, name string) {
	if s.token == "" {
		return "local", "local user"
	}
	return FakeTokenID, FakeTokenName
}

// RequireToken makes every request need "Authorization: Bearer token", a
// token named FakeTokenName.
func (s *Server) RequireToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// DropStreams makes the next n event streams end abruptly after their first
// event, as a flaky network or a restarting server would.
func (s *Server) DropStreams(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drops = n
}

// LoseAnswers makes the next n job creations create their job and then
// close the connection without answering, as a server killed right after
// its commit, or a cut network, would.
func (s *Server) LoseAnswers(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lostAnswers = n
}

// CreateKeys returns the Idempotency-Key header of every job creation
// request, in order ("" for none).
func (s *Server) CreateKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.createKeys)
}

// StreamResumes returns the position every event stream request asked to
// resume from (its Last-Event-ID header, else its after parameter, else "").
func (s *Server) StreamResumes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.streamIDs)
}

// Job returns a copy of a job, or nil.
func (s *Server) Job(id string) *drydock.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return nil
	}
	return s.view(j)
}

// Jobs returns copies of every job in creation order.
func (s *Server) Jobs() []*drydock.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	js := make([]*drydock.Job, 0, len(s.order))
	for _, id := range s.order {
		js = append(js, s.view(s.jobs[id]))
	}
	return js
}

// AddJob stores a pending job created at the given time, as if scheduled.
func (s *Server) AddJob(spec drydock.JobSpec, created time.Time) *drydock.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view(s.addLocked(spec, created))
}

func (s *Server) addLocked(spec drydock.JobSpec, created time.Time) *drydock.Job {
	if spec.Profile == "" {
		spec.Profile = drydock.ProfileHeadless
	}
	// Ids are UUIDv7s, as the real server's, since the API refuses
	// anything else as a job id.
	j := &drydock.Job{
		ID:        uuid.Must(uuid.NewV7()).String(),
		Status:    drydock.StatusPending,
		CreatedAt: created.UTC(),
		JobSpec:   spec,
	}
	// Answers show the names only (drydock.Job's JSON); the values stay
	// here so that tests can check what a client sent.
	if len(spec.Secrets) > 0 {
		j.SecretNames = spec.Secrets.Names()
	}
	s.jobs[j.ID] = j
	s.order = append(s.order, j.ID)
	s.emitLocked(j.ID, drydock.EventStatus, drydock.StatusEvent{Status: j.Status})
	return j
}

// SetStatus moves a job to status and records the transition as an event.
// errMsg is the job's error for StatusError.
func (s *Server) SetStatus(id string, status drydock.JobStatus, errMsg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.mustJob(id)
	now := time.Now().UTC()
	switch {
	case status == drydock.StatusRunning && j.StartedAt == nil:
		j.StartedAt = &now
	case status.Terminal():
		// As the store's FinishJob: nobody is left to answer the question.
		j.FinishedAt, j.WaitingFor = &now, ""
	}
	j.Status, j.Error = status, errMsg
	s.emitLocked(id, drydock.EventStatus, drydock.StatusEvent{Status: status, Error: errMsg})
}

// SetProgress sets a job's step count, usage and summary.
func (s *Server) SetProgress(id string, steps int, usage drydock.Usage, summary string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.mustJob(id)
	j.Steps, j.Usage, j.Summary = steps, usage, summary
	s.bump()
}

// Emit appends an event to a job's log. The data of a known kind must be
// the kind's type (drydock.CheckEventData), as the real server's are: a
// test that feeds the fake another shape panics rather than pass against
// data no server sends. Unknown kinds pass: a newer server may send them.
func (s *Server) Emit(id string, typ drydock.EventType, data any) *drydock.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emitLocked(id, typ, data)
}

func (s *Server) emitLocked(id string, typ drydock.EventType, data any) *drydock.Event {
	s.mustJob(id)
	e := drydock.NewEvent(id, typ, data)
	if _, known := drydock.EventDataTypes[typ]; known {
		if err := drydock.CheckEventData(typ, e.Data); err != nil {
			panic("clienttest: " + err.Error())
		}
	}
	e.Seq = int64(len(s.events[id]) + 1)
	e.Time = time.Now().UTC()
	s.events[id] = append(s.events[id], e)
	s.bump()
	return e
}

// SetArtifact makes a job's archive available in one format.
func (s *Server) SetArtifact(id, format string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustJob(id)
	if s.artifacts[id] == nil {
		s.artifacts[id] = map[string][]byte{}
	}
	s.artifacts[id][format] = data
	s.bump()
}

// SetDiff makes a job's workspace diff available, as GET
// /v1/jobs/{id}/diff gives it: a running job's live diff or an archived
// job's stored one, in whatever state the test left the job.
func (s *Server) SetDiff(id string, patch []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustJob(id)
	s.diffs[id] = patch
	s.bump()
}

func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	j, ok := s.lookup(w, r)
	var data []byte
	if ok {
		data = s.diffs[j.ID]
	}
	s.mu.Unlock()
	if !ok {
		return
	}
	if data == nil {
		writeError(w, s.noDiff(j))
		return
	}
	w.Header().Set("Content-Type", "text/x-diff; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Write(data)
}

// noDiff is the real server's answer for a job without a diff: it serves
// the stored diff of an archived job, and a live one only from a running
// job's sandbox, which the fake has not.
func (s *Server) noDiff(j *drydock.Job) error {
	switch {
	case len(s.artifacts[j.ID]) > 0:
		return drydock.Errorf(drydock.ENOTFOUND, "job %s has no stored diff: its starting point was not recorded or the diff failed (see its events); its archive is at artifact.zip", j.ID)
	case j.Status.Terminal():
		return drydock.Errorf(drydock.ENOTFOUND, "job %s ended without an archived workspace to diff", j.ID)
	case j.Status == drydock.StatusPending:
		return drydock.Errorf(drydock.ECONFLICT, "job %s has not started yet; it has no workspace to diff", j.ID)
	default:
		return drydock.Errorf(drydock.ECONFLICT, "job %s is %s; this server reads its workspace once it is archived", j.ID, j.Status)
	}
}

// mustJob returns a job the test said exists; a wrong id is a bug in the
// test, reported loudly.
func (s *Server) mustJob(id string) *drydock.Job {
	j, ok := s.jobs[id]
	if !ok {
		panic(fmt.Sprintf("clienttest: no job %q", id))
	}
	return j
}

func (s *Server) bump() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// view is the job as the API shows it: a copy with its links.
func (s *Server) view(j *drydock.Job) *drydock.Job {
	v := *j
	// The links are the real server's (api's decorate).
	job := s.URL + "/v1/jobs/" + j.ID
	v.StatusURL = s.URL + "/status/" + j.ID
	v.EventsURL = job + "/events"
	if j.Profile == drydock.ProfileDesktop {
		v.VNCURL = s.URL + "/jobs/" + j.ID + "/desktop"
	}
	if len(s.artifacts[j.ID]) > 0 {
		v.DownloadURL = job + "/artifact.zip"
		v.Result = v.DownloadURL
		v.DownloadURLTar = job + "/artifact.tar.gz"
	}
	if s.diffs[j.ID] != nil || len(s.artifacts[j.ID]) > 0 {
		v.DiffURL = job + "/diff"
	}
	return &v
}

func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// As the real server: a body must say it is JSON (a browser's
		// cross-site form or text/plain request cannot), and a POST
		// without a body needs no type.
		if r.ContentLength != 0 {
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" && (mt != "multipart/form-data" || !creates(r)) {
				writeError(w, &drydock.Error{Code: drydock.EUNSUPPORTEDMEDIA, Message: fmt.Sprintf("send the request body as JSON (Content-Type: application/json), not %q", r.Header.Get("Content-Type"))})
				return
			}
		}
		s.mu.Lock()
		token := s.token
		s.mu.Unlock()
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			writeError(w, drydock.Errorf(drydock.EUNAUTHORIZED, "missing or invalid API token"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeError answers err as the real server does: the one table from code
// to status, and the one error body.
func writeError(w http.ResponseWriter, err error) {
	code := drydock.ErrorCode(err)
	writeJSON(w, drydock.HTTPStatus(code), drydock.ErrorBody{Error: drydock.ErrorDetail{Code: code, Message: drydock.ErrorMessage(err)}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) schedule(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	s.createKeys = append(s.createKeys, key)
	s.mu.Unlock()
	var input int64 // the workspace archive's size, for a multipart creation
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		var err error
		if req, input, err = readUpload(w, r); err != nil {
			writeError(w, err)
			return
		}
	} else {
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				writeError(w, drydock.Errorf(drydock.ETOOLARGE, "body is larger than 1 MiB"))
				return
			}
			writeError(w, drydock.Errorf(drydock.EINVALID, "bad job request: %v", err))
			return
		}
	}
	spec := req.JobSpec
	if spec.Task == "" {
		spec.Task = req.Prompt
	}
	spec.Normalize()
	if err := spec.Validate(); err != nil {
		writeError(w, err)
		return
	}
	key = unquoteKey(key)
	if key != "" {
		if err := drydock.CheckIdempotencyKey(key); err != nil {
			writeError(w, err)
			return
		}
	}
	fp, _ := json.Marshal(struct {
		Spec  drydock.JobSpec
		Input int64
	}{spec, input})
	s.mu.Lock()
	var j *drydock.Job
	rec, held := s.keys[key]
	switch {
	case key == "" || !held:
		stored := s.addLocked(spec, time.Now())
		stored.InputSize = input
		j = s.view(stored)
		if key != "" {
			s.keys[key] = idemRecord{spec: string(fp), id: j.ID}
		}
	case rec.spec != string(fp):
		s.mu.Unlock()
		writeError(w, drydock.KeyReused(key, time.Now().Add(drydock.DefaultIdempotencyTTL)))
		return
	default:
		j = s.view(s.jobs[rec.id])
		w.Header().Set("Idempotent-Replayed", "true")
	}
	lose := s.lostAnswers > 0
	if lose {
		s.lostAnswers--
	}
	s.mu.Unlock()
	if lose {
		// The job exists; its answer never leaves.
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
			return
		}
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Location", j.StatusURL)
	writeJSON(w, http.StatusCreated, j)
}

// unquoteKey reads the Structured Field String form of the header
// ("...", \" and \\ escaped) and leaves a bare value as it is.
func unquoteKey(v string) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return v
	}
	return strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(v[1 : len(v)-1])
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (*drydock.Job, bool) {
	id := r.PathValue("id")
	j, ok := s.jobs[id]
	switch {
	case ok:
	case uuid.Validate(id) != nil:
		// As the real server: what is not a job id is quoted, since it
		// may hold anything.
		writeError(w, drydock.Errorf(drydock.ENOTFOUND, "job %q not found", id))
	default:
		writeError(w, drydock.Errorf(drydock.ENOTFOUND, "job %s not found", id))
	}
	return j, ok
}

func (s *Server) job(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.lookup(w, r); ok {
		v := s.view(j)
		// As the real server: one job's answer lists its follow-ups,
		// oldest first (lists do not).
		for _, id := range s.order {
			if s.jobs[id].ParentJobID == j.ID {
				v.FollowUps = append(v.FollowUps, id)
			}
		}
		writeJSON(w, http.StatusOK, v)
	}
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.lookup(w, r)
	if !ok {
		return
	}
	if j.Status == drydock.StatusPending {
		now := time.Now().UTC()
		j.Status, j.FinishedAt = drydock.StatusCancelled, &now
		s.emitLocked(j.ID, drydock.EventStatus, drydock.StatusEvent{Status: j.Status})
	}
	writeJSON(w, http.StatusAccepted, s.view(j))
}

func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, drydock.Errorf(drydock.EINVALID, "%s must be an integer from %d to %d", name, lo, hi)
	}
	return n, nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	if !onlyParams(w, r, "status", "limit", "cursor", "metadata") {
		return
	}
	limit, err := intParam(r, "limit", 50, 1, 500)
	if err != nil {
		writeError(w, err)
		return
	}
	// As the real server: every metadata=KEY=VALUE pair must be in a
	// job's metadata for it to be listed.
	meta := map[string]string{}
	for _, p := range r.URL.Query()["metadata"] {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			writeError(w, drydock.Errorf(drydock.EINVALID, "metadata filter %q: give metadata=KEY=VALUE", p))
			return
		}
		meta[k] = v
	}
	var want []drydock.JobStatus
	for _, v := range r.URL.Query()["status"] {
		for st := range strings.SplitSeq(v, ",") {
			if !drydock.JobStatus(st).Valid() {
				writeError(w, drydock.Errorf(drydock.EINVALID, "unknown status %q", st))
				return
			}
			want = append(want, drydock.JobStatus(st))
		}
	}
	// The cursor is the number of matching jobs already listed; the real
	// server's is opaque, and clients must treat this one so too.
	skip := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		if skip, err = strconv.Atoi(strings.TrimPrefix(c, "c")); err != nil || !strings.HasPrefix(c, "c") {
			writeError(w, drydock.Errorf(drydock.EINVALID, "bad cursor"))
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var matched []*drydock.Job
	for _, id := range slices.Backward(s.order) {
		j := s.jobs[id]
		if (len(want) == 0 || slices.Contains(want, j.Status)) && hasMetadata(j, meta) {
			matched = append(matched, s.view(j))
		}
	}
	page := struct {
		Jobs       []*drydock.Job `json:"jobs"`
		NextCursor string         `json:"next_cursor"`
	}{Jobs: []*drydock.Job{}}
	if skip < len(matched) {
		end := min(skip+int(limit), len(matched))
		page.Jobs = matched[skip:end]
		if end < len(matched) {
			page.NextCursor = "c" + strconv.Itoa(end)
		}
	}
	writeJSON(w, http.StatusOK, page)
}

func hasMetadata(j *drydock.Job, want map[string]string) bool {
	for k, v := range want {
		if got, ok := j.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func (s *Server) eventsHandler(w http.ResponseWriter, r *http.Request) {
	if !onlyParams(w, r, "after", "limit", "stream") {
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") || r.URL.Query().Get("stream") == "true" {
		s.stream(w, r)
		return
	}
	after, err := intParam(r, "after", 0, 0, 1<<62)
	if err != nil {
		writeError(w, err)
		return
	}
	limit, err := intParam(r, "limit", 100, 1, 1000)
	if err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.lookup(w, r)
	if !ok {
		return
	}
	all := s.events[j.ID]
	page := struct {
		Events    []*drydock.Event `json:"events"`
		NextAfter int64            `json:"next_after"`
		Done      bool             `json:"done"`
	}{Events: []*drydock.Event{}, NextAfter: after}
	for _, e := range all {
		if e.Seq > after && len(page.Events) < int(limit) {
			page.Events = append(page.Events, e)
			page.NextAfter = e.Seq
		}
	}
	page.Done = j.Status.Terminal() && page.NextAfter >= int64(len(all))
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	resume := r.Header.Get("Last-Event-ID")
	if resume == "" {
		resume = r.URL.Query().Get("after")
	}
	var last int64
	if resume != "" {
		var err error
		if last, err = strconv.ParseInt(resume, 10, 64); err != nil {
			writeError(w, drydock.Errorf(drydock.EINVALID, "Last-Event-ID must be an event sequence number"))
			return
		}
	}
	s.mu.Lock()
	s.streamIDs = append(s.streamIDs, resume)
	_, ok := s.lookup(w, r)
	drop := s.drops > 0
	if drop {
		s.drops--
	}
	s.mu.Unlock()
	if !ok {
		return
	}
	id := r.PathValue("id")
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// As the real server: reconnect no sooner than 2 s, which clients
	// honour after a cut.
	_, _ = io.WriteString(w, "retry: 2000\n\n")
	fl := http.NewResponseController(w)
	_ = fl.Flush()
	ping := time.NewTicker(s.ping)
	defer ping.Stop()
	for {
		s.mu.Lock()
		log := s.events[id]
		pending := slices.Clone(log[min(last, int64(len(log))):])
		done := s.jobs[id].Status.Terminal()
		changed := s.changed
		s.mu.Unlock()
		for _, e := range pending {
			b, _ := json.Marshal(e)
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, b); err != nil {
				return
			}
			last = e.Seq
			if drop {
				_ = fl.Flush()
				// Hijacking cuts the TCP connection mid-stream, which is what
				// the client must survive.
				if conn, _, err := fl.Hijack(); err == nil {
					_ = conn.Close()
				}
				return
			}
		}
		if done {
			_, _ = io.WriteString(w, "event: end\ndata: {}\n\n")
			_ = fl.Flush()
			return
		}
		if err := fl.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-ping.C:
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
				return
			}
		}
	}
}

func (s *Server) artifact(format string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		j, ok := s.lookup(w, r)
		var (
			data   []byte
			status drydock.JobStatus
		)
		if ok {
			data, status = s.artifacts[j.ID][format], j.Status
		}
		s.mu.Unlock()
		if !ok {
			return
		}
		id := r.PathValue("id")
		switch {
		case data == nil && status.Terminal():
			writeError(w, drydock.Errorf(drydock.ENOTFOUND, "job %s ended without an archived workspace", id))
			return
		case data == nil:
			writeError(w, drydock.Errorf(drydock.ECONFLICT, "job %s is %s; its workspace is archived when it ends", id, status))
			return
		}
		ct := "application/gzip"
		if format == "zip" {
			ct = "application/zip"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", id+"."+format))
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data)
	}
}
