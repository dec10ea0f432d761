package sqlite

import (
	"context"
	"fmt"
	"time"
)

// EraseSecretsFinishedBefore erases the sealed secrets that jobs which
// ended before t kept for their follow-ups.
func (s *Store) EraseSecretsFinishedBefore(ctx context.Context, t time.Time) (int, error) {
	var n int64
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET secrets_sealed = NULL
			WHERE secrets_sealed IS NOT NULL AND status IN ('complete', 'error', 'cancelled')
				AND finished_at IS NOT NULL AND finished_at < ?`, fmtTime(t))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("erase the kept secrets of finished jobs: %w", err)
	}
	return int(n), nil
}
