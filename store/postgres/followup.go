package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// FollowUps returns the ids of the jobs that follow id up, oldest first
// (ids are UUIDv7), at most drydock.MaxFollowUpsListed of them.
func (s *Store) FollowUps(ctx context.Context, id, owner string) ([]string, error) {
	if badKey(id) || badKey(owner) {
		return []string{}, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM jobs WHERE parent_job_id = $1 AND parent_job_id <> ''
		AND ($3 = '' OR owner_id = $3) ORDER BY id LIMIT $2`,
		id, drydock.MaxFollowUpsListed, owner)
	if err != nil {
		return nil, sqlstore.Wrap("list follow-ups of job "+id, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, sqlstore.Wrap("list follow-ups of job "+id, err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}
