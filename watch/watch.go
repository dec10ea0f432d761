// Package watch wraps a drydock.Store so that readers in this process learn
// at once when a job's events or state change. Streams still poll the store
// (another replica may be the writer), but a local write wakes them without
// waiting for the poll interval.
package watch

import (
	"context"
	"sync"

	"github.com/drydockhq/drydock"
)

// Store is a drydock.Store that signals writes per job.
type Store struct {
	drydock.Store

	mu      sync.Mutex
	waiters map[string]*waiters
}

// waiters share one channel per job; n counts them so that the entry goes
// away when the last one leaves, whether or not the job is ever written again.
type waiters struct {
	ch chan struct{}
	n  int
}

var _ drydock.Store = (*Store)(nil)

// Wrap returns s with change notification.
func Wrap(s drydock.Store) *Store {
	return &Store{Store: s, waiters: map[string]*waiters{}}
}

// Changed returns a channel closed at the next write to job id's events or
// state, and a release func the caller must call when it stops waiting. Take
// the channel before reading, then wait on it, so that no write between the
// read and the wait is missed.
func (s *Store) Changed(id string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.waiters[id]
	if !ok {
		w = &waiters{ch: make(chan struct{})}
		s.waiters[id] = w
	}
	w.n++
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			w.n--
			if w.n == 0 && s.waiters[id] == w {
				delete(s.waiters, id)
			}
		})
	}
}

// Watched reports how many jobs have waiters (for tests and metrics).
func (s *Store) Watched() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiters)
}

func (s *Store) signal(id string) {
	s.mu.Lock()
	w, ok := s.waiters[id]
	delete(s.waiters, id)
	s.mu.Unlock()
	if ok {
		close(w.ch)
	}
}

func (s *Store) AppendEvent(ctx context.Context, e *drydock.Event) error {
	err := s.Store.AppendEvent(ctx, e)
	if err == nil {
		s.signal(e.JobID)
	}
	return err
}

func (s *Store) FinishJob(ctx context.Context, id, owner string, r drydock.JobResult) error {
	err := s.Store.FinishJob(ctx, id, owner, r)
	if err == nil {
		s.signal(id)
	}
	return err
}

func (s *Store) CancelJob(ctx context.Context, id string) (*drydock.Job, error) {
	j, err := s.Store.CancelJob(ctx, id)
	if err == nil {
		s.signal(id)
	}
	return j, err
}

func (s *Store) UpdateProgress(ctx context.Context, id, owner string, p drydock.JobProgress) error {
	err := s.Store.UpdateProgress(ctx, id, owner, p)
	if err == nil {
		s.signal(id)
	}
	return err
}

// AppendMessage wakes the job's streams like AppendEvent.
func (s *Store) AppendMessage(ctx context.Context, e *drydock.Event) error {
	err := s.Store.AppendMessage(ctx, e)
	if err == nil {
		s.signal(e.JobID)
	}
	return err
}

// SetWaitingFor wakes the job's streams, which show the question.
func (s *Store) SetWaitingFor(ctx context.Context, id, owner, question string) error {
	err := s.Store.SetWaitingFor(ctx, id, owner, question)
	if err == nil {
		s.signal(id)
	}
	return err
}

// ChangePause wakes the job's streams, which show the pause.
func (s *Store) ChangePause(ctx context.Context, id string, c drydock.PauseChange) (*drydock.Job, error) {
	j, err := s.Store.ChangePause(ctx, id, c)
	if err == nil {
		s.signal(id)
	}
	return j, err
}
