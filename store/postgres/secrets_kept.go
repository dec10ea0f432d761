package postgres

import (
	"context"
	"time"

	"github.com/drydockhq/drydock/store/sqlstore"
)

// EraseSecretsFinishedBefore erases the sealed secrets that jobs which
// ended before t kept for their follow-ups.
func (s *Store) EraseSecretsFinishedBefore(ctx context.Context, t time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET secrets_sealed = NULL
		WHERE secrets_sealed IS NOT NULL AND status IN ('complete', 'error', 'cancelled')
			AND finished_at IS NOT NULL AND finished_at < $1`, t)
	if err != nil {
		return 0, sqlstore.Wrap("erase the kept secrets of finished jobs", err)
	}
	return int(tag.RowsAffected()), nil
}
