package sqlite

import (
	"context"
	"fmt"

	"github.com/drydockhq/drydock"
)

// FollowUps returns the ids of the jobs that follow id up, oldest first
// (ids are UUIDv7), at most drydock.MaxFollowUpsListed of them.
func (s *Store) FollowUps(ctx context.Context, id, owner string) ([]string, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT id FROM jobs WHERE parent_job_id = ? AND parent_job_id <> ''
		AND (? = '' OR owner_id = ?) ORDER BY id LIMIT ?`,
		id, owner, owner, drydock.MaxFollowUpsListed)
	if err != nil {
		return nil, fmt.Errorf("list follow-ups of job %s: %w", id, err)
	}
	defer rows.Close()
	ids := make([]string, 0)
	for rows.Next() {
		var child string
		if err := rows.Scan(&child); err != nil {
			return nil, fmt.Errorf("list follow-ups of job %s: %w", id, err)
		}
		ids = append(ids, child)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list follow-ups of job %s: %w", id, err)
	}
	return ids, nil
}
