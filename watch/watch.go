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
	waiters map[string]chan struct{}
}

var _ drydock.Store = (*Store)(nil)

// Wrap returns s with change notification.
func Wrap(s drydock.Store) *Store {
	return &Store{Store: s, waiters: map[string]chan struct{}{}}
}

// Changed returns a channel closed at the next write to job id's events or
// state. Take the channel before reading, then wait on it, so that no write
// between the read and the wait is missed.
func (s *Store) Changed(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.waiters[id]
	if !ok {
		ch = make(chan struct{})
		s.waiters[id] = ch
	}
	return ch
}

func (s *Store) signal(id string) {
	s.mu.Lock()
	ch, ok := s.waiters[id]
	delete(s.waiters, id)
	s.mu.Unlock()
	if ok {
		close(ch)
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
